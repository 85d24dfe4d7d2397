#!/usr/bin/env bash
# Build deploy/Dockerfile and try the image with podman or docker (deploy/README.md, "Smoke test").
#   deploy/smoke.sh                       # from anywhere; prints PASS/FAIL lines and a summary
# It checks: the image (uid 10001, HEALTHCHECK kept, the hub extra, the CJK font), the CLI in
# English and Chinese without a network, a Chinese chart drawn with a real CJK font, and the bot
# with a read-only root: /healthz, /readyz against Redis, /metrics, the image's own HEALTHCHECK,
# a forged and two signed /gpusize slash commands answered through a Slack Web API stand-in
# (deploy/smoke.py), then /readyz still 200 (Redis reported unreachable) once Redis is gone.
# Everything listens on 127.0.0.1 only (host network), each on a free port (METRICS_PORT too:
# 9100 is node_exporter's on many hosts): the bot, Redis and the stand-in. Containers and their
# anonymous volumes are removed at the end (KEEP=1 keeps them).
#
# Settings (environment):
#   ENGINE=podman|docker        default: podman if installed, else a running docker; as root on
#                               Debian/Ubuntu with neither, podman is installed with apt-get
#   IMAGE=localhost/gpusize:smoke   the tag built and tried
#   BASE=auto|pull|debootstrap  the image under PYTHON_IMAGE: auto uses a local copy or pulls,
#                               else makes one from Debian packages (debootstrap, root only)
#   PYTHON_IMAGE=python:3.11-slim-bookworm   the Dockerfile's default base
#   LOCAL_BASE=localhost/gpusize-python:3.11-bookworm   the tag of the Debian-made base;
#                               REBUILD_BASE=1 makes it again (else an existing one is reused)
#   PIP_INDEX_URL, DEBIAN_MIRROR   mirrors, passed as build arguments (DEBIAN_MIRROR also to
#                               debootstrap), e.g. https://mirrors.aliyun.com/pypi/simple/ and
#                               http://mirrors.tuna.tsinghua.edu.cn
#   CA_BUNDLE=FILE              a PEM bundle for pip and apt behind a TLS-inspecting proxy (a
#                               build secret: not stored in the image)
#   REDIS=auto|container|host   auto: REDIS_IMAGE if present locally, else the host's
#                               redis-server, else REDIS_IMAGE pulled; REDIS_IMAGE=redis:7
#   RUNTIME=, RUN_OPTS=         podman only: an OCI runtime (runc, crun) and extra `podman run`
#                               options; by default the first set that starts a container is
#                               taken (plain, the caller's ulimits, runc, runc and ulimits)
#   SKIP_BUILD=1                try an existing IMAGE; KEEP=1 leaves containers and files
#   OUT=DIR                     where results.txt, the charts and the bot's log go
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-localhost/gpusize:smoke}
BASE=${BASE:-auto}
PYTHON_IMAGE=${PYTHON_IMAGE:-python:3.11-slim-bookworm}
LOCAL_BASE=${LOCAL_BASE:-localhost/gpusize-python:3.11-bookworm}
REBUILD_BASE=${REBUILD_BASE:-0}
PIP_INDEX_URL=${PIP_INDEX_URL:-}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-}
CA_BUNDLE=${CA_BUNDLE:-}
REDIS=${REDIS:-auto}
REDIS_IMAGE=${REDIS_IMAGE:-redis:7}
RUNTIME=${RUNTIME:-}
SKIP_BUILD=${SKIP_BUILD:-0}
KEEP=${KEEP:-0}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/gpusize-smoke.XXXXXX")}
NAME=gpusize-smoke-$$
SECRET=smoke-signing-secret-$$
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpusize-smoke-work.XXXXXX")
RESULTS=$OUT/results.txt
: >"$RESULTS"
E=()          # the engine's command line (podman may carry --runtime)
RUN_ARGS=()   # options for every `run`
BUILD_ARGS=() # options for `build`

say() { printf '%s\n' "$*" | tee -a "$RESULTS"; }
die() { say "ERROR: $*"; exit 2; }
result() { say "$(printf '%-4s  %s: %s' "$1" "$2" "$3")"; } # result PASS|FAIL NAME DETAIL
as_root() { [ "$(id -u)" = 0 ]; }
apt_install() { # apt_install PKG...: only as root on Debian/Ubuntu
  if as_root && command -v apt-get >/dev/null 2>&1; then
    say "installing $* (apt-get)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    return 1
  fi
}
exists() { "${E[@]}" image inspect "$1" >/dev/null 2>&1; }

cleanup() {
  set +e
  if [ ${#E[@]} -gt 0 ]; then
    "${E[@]}" logs "$NAME-bot" >"$OUT/bot.log" 2>&1
    if [ "$KEEP" != 1 ]; then
      # -v: the redis image declares VOLUME /data, one anonymous volume per run otherwise
      for c in bot redis standin; do "${E[@]}" rm -f -v "$NAME-$c" >/dev/null 2>&1; done
    fi
  fi
  if [ -f "$WORK/redis.pid" ]; then kill "$(cat "$WORK/redis.pid")" 2>/dev/null; fi
  if [ -s "$WORK/stderr" ]; then cp "$WORK/stderr" "$OUT/engine-stderr.txt"; fi
  if [ "$KEEP" != 1 ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

# -- the engine ------------------------------------------------------------------------------

if [ -z "${ENGINE:-}" ]; then
  if command -v podman >/dev/null 2>&1; then
    ENGINE=podman
  elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    ENGINE=docker
  elif apt_install podman runc; then
    ENGINE=podman
  else
    die "neither podman nor a running docker: install podman (apt-get install podman) or start docker"
  fi
fi
E=("$ENGINE")
KIND=$(basename "$ENGINE") # podman or docker (ENGINE may be a path)
if [ -n "$RUNTIME" ]; then E+=(--runtime "$RUNTIME"); fi
if [ -n "${RUN_OPTS:-}" ]; then read -r -a RUN_ARGS <<<"$RUN_OPTS"; fi
# $HOME/.cache on a tmpfs the app (uid 10001) can write. The image makes that folder (0700, the
# app's) for a volume to start as the app's; podman copies its mode onto a tmpfs there but
# leaves it root's, so the bot could not open its cache (it failed to start), unless chowned.
# Docker's tmpfs is 1777 and takes no such option.
CACHE_TMPFS=(--tmpfs /home/app/.cache)
if [ "$KIND" = podman ]; then
  CACHE_TMPFS=(--mount "type=tmpfs,destination=/home/app/.cache,chown=true")
fi
say "engine: $("$ENGINE" --version)"

# -- the base image --------------------------------------------------------------------------

debian_sources() { # the apt sources of Docker's debian:bookworm images, with origin $1
  cat <<EOF
Types: deb
URIs: $1/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $1/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
}

make_local_base() {
  as_root || die "BASE=debootstrap needs root (or load $PYTHON_IMAGE and use BASE=pull)"
  command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap \
    || die "debootstrap is missing: apt-get install debootstrap"
  local root=$WORK/rootfs origin=${DEBIAN_MIRROR:-http://deb.debian.org} start=$SECONDS
  origin=${origin%/}
  say "making $LOCAL_BASE from Debian bookworm ($origin): python3.11 and its venv module"
  debootstrap --variant=minbase --include=python3,python3-venv,python-is-python3,ca-certificates \
    bookworm "$root" "$origin/debian" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -5 "$WORK/debootstrap.log"; die "debootstrap failed"; }
  rm -f "$root/etc/apt/sources.list"
  debian_sources "$origin" >"$root/etc/apt/sources.list.d/debian.sources"
  # the security and point-release updates published since the release
  { chroot "$root" apt-get update -qq \
      && chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get upgrade -y -qq \
      && chroot "$root" apt-get clean; } >>"$WORK/debootstrap.log" 2>&1 \
    || { tail -5 "$WORK/debootstrap.log"; die "apt-get upgrade in the new base failed"; }
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
  # deb.debian.org as in Docker's images: the Dockerfile's DEBIAN_MIRROR rewrites that name
  debian_sources http://deb.debian.org >"$root/etc/apt/sources.list.d/debian.sources"
  tar --numeric-owner -C "$root" -c . \
    | "${E[@]}" import --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' - "$LOCAL_BASE" \
      >/dev/null 2>>"$WORK/debootstrap.log"
  rm -rf "$root"
  say "base $LOCAL_BASE made in $((SECONDS - start)) s"
}

base=$PYTHON_IMAGE
case $BASE in
  pull)
    exists "$base" || "${E[@]}" pull "$base" || die "cannot pull $base" ;;
  debootstrap)
    base=$LOCAL_BASE
    if [ "$REBUILD_BASE" = 1 ] || ! exists "$base"; then make_local_base; fi ;;
  auto)
    if ! exists "$base" && { say "pulling $base"; ! "${E[@]}" pull "$base" >/dev/null 2>&1; }; then
      say "$PYTHON_IMAGE: not here and not pullable; using a base made from Debian packages"
      base=$LOCAL_BASE
      if [ "$REBUILD_BASE" = 1 ] || ! exists "$base"; then make_local_base; fi
    fi ;;
  *) die "BASE must be auto, pull or debootstrap" ;;
esac
say "base image: $base"

# -- how containers start here (podman) ------------------------------------------------------

if [ "$KIND" = podman ] && [ -z "${RUN_OPTS:-}" ]; then
  # Without CAP_SYS_RESOURCE podman's default ulimits (nofile 1048576) cannot be set; crun
  # refuses a cgroup v1/v2 hybrid that runc accepts. Try the plain way first.
  nofile=$(ulimit -Hn) nproc=$(ulimit -Hu)
  [ "$nofile" = unlimited ] && nofile=1048576
  if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
  limits="--ulimit nofile=$nofile:$nofile --ulimit nproc=$nproc:$nproc"
  chosen=
  for candidate in "|" "|$limits" "runc|" "runc|$limits"; do
    runtime=${candidate%%|*} opts=${candidate#*|}
    if [ -n "$runtime" ] && { [ -n "$RUNTIME" ] || ! command -v "$runtime" >/dev/null 2>&1; }; then
      continue
    fi
    try=("${E[@]}")
    if [ -n "$runtime" ]; then try+=(--runtime "$runtime"); fi
    read -r -a extra <<<"$opts"
    if "${try[@]}" run --rm --network none "${extra[@]}" "$base" true 2>"$WORK/probe.err"; then
      E=("${try[@]}") RUN_ARGS=("${extra[@]}") chosen=1
      break
    fi
    say "podman ${runtime:+--runtime $runtime }run ${opts:-(defaults)}: $(tail -1 "$WORK/probe.err")"
  done
  [ -n "$chosen" ] || die "no way to start a container here (see the errors above)"
fi
if [ "$KIND" = podman ]; then
  # the OCI format has no HEALTHCHECK; the RUN steps need the same ulimits as containers
  BUILD_ARGS+=(--format docker "${RUN_ARGS[@]}")
fi
say "containers start with: ${E[*]} run ${RUN_ARGS[*]:-}"

# -- build -----------------------------------------------------------------------------------

if [ "$SKIP_BUILD" != 1 ]; then
  BUILD_ARGS+=(--network host --build-arg "PYTHON_IMAGE=$base")
  if [ -n "$PIP_INDEX_URL" ]; then BUILD_ARGS+=(--build-arg "PIP_INDEX_URL=$PIP_INDEX_URL"); fi
  if [ -n "$DEBIAN_MIRROR" ]; then BUILD_ARGS+=(--build-arg "DEBIAN_MIRROR=$DEBIAN_MIRROR"); fi
  if [ -n "$CA_BUNDLE" ]; then BUILD_ARGS+=(--secret "id=ca_bundle,src=$CA_BUNDLE"); fi
  start=$SECONDS
  say "building $IMAGE: ${E[*]} build ${BUILD_ARGS[*]} -f deploy/Dockerfile ."
  if ! DOCKER_BUILDKIT=1 "${E[@]}" build "${BUILD_ARGS[@]}" -f deploy/Dockerfile -t "$IMAGE" . \
      >"$OUT/build.log" 2>&1; then
    tail -20 "$OUT/build.log"
    die "the build failed (log: $OUT/build.log)"
  fi
  say "built in $((SECONDS - start)) s"
fi
exists "$IMAGE" || die "no image $IMAGE"
size=$("${E[@]}" image inspect --format '{{.Size}}' "$IMAGE")
say "image size: $((size / 1000000)) MB ($size bytes)"

# -- the image -------------------------------------------------------------------------------

# one-shot runs: no network, no health check (podman would try to start a systemd timer)
run() { "${E[@]}" run --rm --network none --no-healthcheck "${RUN_ARGS[@]}" "$@" 2>>"$WORK/stderr"; }

user=$("${E[@]}" image inspect --format '{{.Config.User}}' "$IMAGE")
uid=$(run "$IMAGE" id -u || true)
[ "$user" = 10001:10001 ] && [ "$uid" = 10001 ] && r=PASS || r=FAIL
result "$r" "non-root user" "USER $user, id -u $uid"

health=$("${E[@]}" image inspect --format '{{json .Config.Healthcheck}}' "$IMAGE" 2>/dev/null || true)
case $health in *healthz*) r=PASS ;; *) r=FAIL ;; esac
result "$r" "HEALTHCHECK in the image" "${health:0:100}"

hub=$(run "$IMAGE" python -c 'import huggingface_hub; print(huggingface_hub.__version__)' || true)
[[ $hub =~ ^[0-9]+\.[0-9] ]] && r=PASS || r=FAIL
result "$r" "hub extra installed" "huggingface_hub $hub"

# -- the CLI, offline ------------------------------------------------------------------------

if out=$(run "$IMAGE" gpusize 13B full-finetune) && [[ $out == *Recommended* ]]; then
  r=PASS; else r=FAIL; fi
result "$r" "gpusize 13B full-finetune" "$(grep -m1 Recommended <<<"$out" | cut -c1-90)"
printf '%s\n' "$out" >"$OUT/cli-en.txt"
if out=$(run "$IMAGE" gpusize 13B 全参微调 --lang zh) && [[ $out == *推荐* ]]; then
  r=PASS; else r=FAIL; fi
result "$r" "gpusize 13B 全参微调 --lang zh" "$(grep -m1 推荐 <<<"$out" | cut -c1-60)"
printf '%s\n' "$out" >"$OUT/cli-zh.txt"

# -- a Chinese chart drawn with a CJK font ---------------------------------------------------

mkdir -p "$WORK/charts" && chmod 0777 "$WORK/charts"
chart=$(run --read-only --tmpfs /tmp "${CACHE_TMPFS[@]}" -v "$WORK/charts:/out:z" "$IMAGE" sh -c '
  gpusize 13B 全参微调 --lang zh --chart /out/zh.png >/dev/null &&
  gpusize 13B full-finetune --chart /out/en.png >/dev/null &&
  python -c "
from matplotlib import font_manager
from present import charts
font = charts.cjk_font()
path = font_manager.findfont(font_manager.FontProperties(family=font)) if font else None
langs = [charts.png_language(open(f\"/out/{n}.png\", \"rb\").read()) for n in (\"zh\", \"en\")]
print(font in charts.CJK_FAMILIES, font, path, *langs, sep=\"|\")
"' || true)
IFS='|' read -r known font path lang_zh lang_en <<<"$chart"
[ "$known" = True ] && [ "$lang_zh" = zh ] && [ "$lang_en" = en ] && r=PASS || r=FAIL
result "$r" "Chinese chart" "font ${font:-none} (${path:-?}), PNG Language zh=${lang_zh:-?} en=${lang_en:-?}"
cp "$WORK/charts/"*.png "$OUT/" 2>/dev/null || true

# -- the bot ---------------------------------------------------------------------------------

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { local p=$1; while ! port_free "$p"; do p=$((p + 1)); done; echo "$p"; }
BOT_PORT=$(free_port 3390)
STANDIN_PORT=$(free_port $((BOT_PORT + 1)))
REDIS_PORT=$(free_port 6390)
METRICS_PORT=$(free_port $((STANDIN_PORT + 1)))
while [ "$METRICS_PORT" = "$REDIS_PORT" ]; do METRICS_PORT=$(free_port $((METRICS_PORT + 1))); done
hostnet() { "${E[@]}" run --network host "${RUN_ARGS[@]}" "$@" 2>>"$WORK/stderr"; }

if [ "$REDIS" = auto ]; then
  if exists "$REDIS_IMAGE"; then REDIS=container
  elif command -v redis-server >/dev/null 2>&1; then REDIS=host
  else REDIS=container; fi
fi
redis_args=(--port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no)
if [ "$REDIS" = host ]; then
  redis-server "${redis_args[@]}" --daemonize yes --pidfile "$WORK/redis.pid" --dir "$WORK" >/dev/null
  say "redis: the host's redis-server $(redis-server --version | grep -o 'v=[0-9.]*') on 127.0.0.1:$REDIS_PORT"
else
  hostnet -d --name "$NAME-redis" "$REDIS_IMAGE" redis-server "${redis_args[@]}" >/dev/null
  say "redis: container $REDIS_IMAGE on 127.0.0.1:$REDIS_PORT"
fi

mkdir -p "$WORK/share" && chmod 0777 "$WORK/share"
cp deploy/smoke.py "$WORK/share/smoke.py" && chmod 0644 "$WORK/share/smoke.py"
share=(-v "$WORK/share:/share:z")
hostnet -d --name "$NAME-standin" --no-healthcheck "${share[@]}" "$IMAGE" \
  python /share/smoke.py standin --port "$STANDIN_PORT" --log /share/calls.jsonl >/dev/null
for _ in $(seq 50); do port_free "$STANDIN_PORT" || break; sleep 0.2; done

# a model outside the catalog, through HF_ENDPOINT (the stand-in), cached under the tmpfs $HOME/.cache
params=$(hostnet --rm --no-healthcheck --read-only --tmpfs /tmp "${CACHE_TMPFS[@]}" \
  -e "HF_ENDPOINT=http://127.0.0.1:$STANDIN_PORT" "$IMAGE" sh -c 'gpusize smoke-org/tiny-qwen \
  inference --json | python -c "import json, sys; print(json.load(sys.stdin)[\"model\"][\"params\"])"' \
  || true)
[ "$params" = 494032768 ] && r=PASS || r=FAIL
result "$r" "Hub model through HF_ENDPOINT" "smoke-org/tiny-qwen: ${params:-no answer} parameters"
start=$SECONDS
hostnet -d --name "$NAME-bot" --read-only --tmpfs /tmp "${CACHE_TMPFS[@]}" --cap-drop ALL \
  --security-opt no-new-privileges \
  -e SLACK_BOT_TOKEN=xoxb-smoke-test -e SLACK_SIGNING_SECRET="$SECRET" \
  -e "REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0" -e "PORT=$BOT_PORT" \
  -e "METRICS_PORT=$METRICS_PORT" \
  -e "SLACK_API_URL=http://127.0.0.1:$STANDIN_PORT/api/" -e DIGEST_SCHEDULER=false \
  "$IMAGE" gpusize serve --host=127.0.0.1 >/dev/null
say "bot: 127.0.0.1:$BOT_PORT (read-only root), Slack stand-in: 127.0.0.1:$STANDIN_PORT"

checker=(hostnet --rm --no-healthcheck "${share[@]}" "$IMAGE" python /share/smoke.py)
"${checker[@]}" check --bot "http://127.0.0.1:$BOT_PORT" --secret "$SECRET" \
  --standin-log /share/calls.jsonl --response-url "http://127.0.0.1:$STANDIN_PORT/response/r1" \
  --metrics "http://127.0.0.1:$METRICS_PORT" \
  | tee -a "$RESULTS" || true
say "bot healthy and answered within $((SECONDS - start)) s of its start"

if [ "$KIND" = podman ]; then
  hc=$("${E[@]}" healthcheck run "$NAME-bot" 2>&1) && r=PASS || r=FAIL
  result "$r" "podman healthcheck run" "${hc:-exit 0}"
else
  # docker runs it only every 30 s: run the image's own test command once, as docker would
  hc=$("${E[@]}" exec "$NAME-bot" python -c "$("${E[@]}" image inspect --format \
    '{{index .Config.Healthcheck.Test 3}}' "$IMAGE")" 2>&1) && r=PASS || r=FAIL
  result "$r" "HEALTHCHECK command" "${hc:-exit 0}"
fi
tracebacks=$("${E[@]}" logs "$NAME-bot" 2>&1 | grep -c Traceback || true)
[ "$tracebacks" = 0 ] && r=PASS || r=FAIL
result "$r" "no traceback in the bot's log" "$tracebacks"

if [ "$REDIS" = host ]; then kill "$(cat "$WORK/redis.pid")"; rm -f "$WORK/redis.pid"
else "${E[@]}" rm -f -v "$NAME-redis" >/dev/null; fi
sleep 1
# the pod stays in the Service while Redis is out (it still answers one-shot questions)
"${checker[@]}" expect "http://127.0.0.1:$BOT_PORT/readyz" 200 --contains unreachable \
  | tee -a "$RESULTS" || true
"${checker[@]}" expect "http://127.0.0.1:$BOT_PORT/healthz" 200 | tee -a "$RESULTS" || true
FAILED=$(grep -c '^FAIL' "$RESULTS" || true)

say "---"
say "$(grep -c '^PASS' "$RESULTS") passed, $FAILED failed (results: $RESULTS)"
[ "$FAILED" = 0 ]
