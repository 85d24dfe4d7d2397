#!/usr/bin/env bash
# Build a release image: tagged by version and commit, on a base pinned by digest, installed
# from the hashed locks (deploy/requirements*.lock); optionally push it and pin an overlay to the
# pushed digest, so every node runs the same bytes whatever its imagePullPolicy.
#   deploy/release.sh                                   # build IMAGE:VERSION-gSHA locally
#   deploy/release.sh --push --kustomization deploy/k8s/overlays/mine
# Settings (environment):
#   IMAGE=gpusize            the repository, e.g. registry.example.com/team/gpusize
#   ENGINE=docker|podman     default: docker if it answers, else podman
#   PYTHON_IMAGE=python:3.11-slim-bookworm   the base; pulled and pinned to its digest
#                            (give name@sha256:... to pin one yourself)
#   ALLOW_DIRTY=1            build from a tree with uncommitted changes (tagged -dirty, never
#                            pushed)
#   PIP_INDEX_URL, DEBIAN_MIRROR   mirrors, passed as the Dockerfile's build arguments
#   CA_BUNDLE=FILE           a TLS-inspecting proxy's CA for pip and apt (a build secret, never
#                            stored in the image)
# Prints the image reference with its digest last.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-gpusize}
PYTHON_IMAGE=${PYTHON_IMAGE:-python:3.11-slim-bookworm}
PUSH=0
KUSTOMIZATION=
while [ $# -gt 0 ]; do
  case $1 in
    --push) PUSH=1 ;;
    --kustomization) KUSTOMIZATION=${2:?--kustomization needs a folder}; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "release.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$KUSTOMIZATION" ] && [ "$PUSH" != 1 ]; then
  echo "release.sh: --kustomization pins the pushed digest: it needs --push" >&2; exit 2
fi
if [ -z "${ENGINE:-}" ]; then
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then ENGINE=docker
  elif command -v podman >/dev/null 2>&1; then ENGINE=podman
  else echo "release.sh: neither a running docker nor podman" >&2; exit 2; fi
fi

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' pyproject.toml | head -1)
[ -n "$version" ] || { echo "release.sh: no version in pyproject.toml" >&2; exit 2; }
revision=$(git rev-parse HEAD)
tag="$version-g$(git rev-parse --short=12 HEAD)"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  [ "${ALLOW_DIRTY:-0}" = 1 ] || { echo "release.sh: uncommitted changes (ALLOW_DIRTY=1 to build anyway)" >&2; exit 2; }
  [ "$PUSH" != 1 ] || { echo "release.sh: a dirty tree is never pushed" >&2; exit 2; }
  tag="$tag-dirty"
fi

# The base by digest: the tag python:3.11-slim-bookworm moves with every Debian or Python fix.
base=$PYTHON_IMAGE
if [[ $base != *@sha256:* ]]; then
  "$ENGINE" pull "$base" >/dev/null
  base=$("$ENGINE" image inspect --format '{{index .RepoDigests 0}}' "$base")
  [[ $base == *@sha256:* ]] || { echo "release.sh: no digest for $PYTHON_IMAGE" >&2; exit 2; }
fi
echo "base: $base"

build=(build -f deploy/Dockerfile --build-arg "PYTHON_IMAGE=$base"
       --label "org.opencontainers.image.version=$version"
       --label "org.opencontainers.image.revision=$revision"
       --label "org.opencontainers.image.base.name=${PYTHON_IMAGE%@*}"
       --label "org.opencontainers.image.base.digest=${base#*@}"
       -t "$IMAGE:$tag")
if [ "$(basename "$ENGINE")" = podman ]; then build+=(--format docker); fi  # keeps HEALTHCHECK
if [ -n "${PIP_INDEX_URL:-}" ]; then build+=(--build-arg "PIP_INDEX_URL=$PIP_INDEX_URL"); fi
if [ -n "${DEBIAN_MIRROR:-}" ]; then build+=(--build-arg "DEBIAN_MIRROR=$DEBIAN_MIRROR"); fi
if [ -n "${CA_BUNDLE:-}" ]; then build+=(--secret "id=ca_bundle,src=$CA_BUNDLE"); fi
DOCKER_BUILDKIT=1 "$ENGINE" "${build[@]}" .
echo "built: $IMAGE:$tag"
[ "$PUSH" = 1 ] || exit 0

digestfile=$(mktemp)
trap 'rm -f "$digestfile"' EXIT
if [ "$(basename "$ENGINE")" = podman ]; then
  "$ENGINE" push --digestfile "$digestfile" "$IMAGE:$tag"
  digest=$(cat "$digestfile")
else
  "$ENGINE" push "$IMAGE:$tag"
  digest=$("$ENGINE" image inspect --format '{{index .RepoDigests 0}}' "$IMAGE:$tag")
  digest=${digest#*@}
fi
[[ $digest == sha256:* ]] || { echo "release.sh: the push reported no digest" >&2; exit 2; }

if [ -n "$KUSTOMIZATION" ]; then
  # the `images:` entry for gpusize: newName, newTag and digest (kubectl renders name:tag@digest)
  python3 - "$KUSTOMIZATION/kustomization.yaml" "$IMAGE" "$tag" "$digest" <<'PY'
import re
import sys

path, name, tag, digest = sys.argv[1:]
text = open(path, encoding="utf-8").read()
entry = f"  - name: gpusize\n    newName: {name}\n    newTag: {tag}\n    digest: {digest}\n"
block = re.compile(r"^  - name: gpusize\n(?:    .*\n)*", re.M)
if block.search(text):
    text = block.sub(lambda _: entry, text, count=1)
elif re.search(r"^images:\n", text, re.M):
    text = re.sub(r"^images:\n", lambda m: m[0] + entry, text, count=1, flags=re.M)
else:
    text += "images:\n" + entry
open(path, "w", encoding="utf-8").write(text)
PY
  echo "pinned: $KUSTOMIZATION/kustomization.yaml"
fi
echo "$IMAGE:$tag@$digest"
