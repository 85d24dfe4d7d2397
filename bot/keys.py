"""Every Redis key the bot uses, in one place. The schema version is in the prefix so a change of
layout never reads old data."""

from __future__ import annotations

PREFIX = "gpusize:v1"


def conversation(team: str, channel: str, thread_ts: str) -> str:
    """Hash: one field per request input (JSON), plus the thread's record (bot.conversation:
    `ThreadRecord`, its field names in `FIELDS`)."""
    return f"{PREFIX}:conv:{team}:{channel}:{thread_ts}"


def conversation_log(team: str, channel: str, thread_ts: str) -> str:
    """List: who changed what, oldest first."""
    return f"{PREFIX}:convlog:{team}:{channel}:{thread_ts}"


def event_seen(event_id: str) -> str:
    """Set once per Slack event id: retried and duplicate deliveries are dropped."""
    return f"{PREFIX}:event:{event_id}"


def action_seen(team: str, user: str, action_ts: str) -> str:
    """Set once per button press: interactive payloads are not retried, double clicks happen."""
    return f"{PREFIX}:action:{team}:{user}:{action_ts}"


def recent_answers(team: str, user: str) -> str:
    """List (newest first, JSON): the answers a person asked for, linked from their App Home."""
    return f"{PREFIX}:recent:{team}:{user}"


def form_submitted(view: str) -> str:
    """Set once per submitted form (its view id and hash): a double submission posts once."""
    return f"{PREFIX}:form:{view}"


def message_seen(team: str, channel: str, ts: str) -> str:
    """Set once per message: a thread reply that mentions the bot arrives as two events."""
    return f"{PREFIX}:msg:{team}:{channel}:{ts}"


def price_records(scope: str) -> str:
    """Hash: record id -> price record (JSON). scope "global" (catalog, feeds) or a team id."""
    return f"{PREFIX}:prices:{scope}"


def prices_seeded() -> str:
    """The catalog version whose rows have been copied into the global price history."""
    return f"{PREFIX}:prices:seeded"


def feed_status() -> str:
    """Hash: feed URL -> last fetch outcome (JSON)."""
    return f"{PREFIX}:feeds"


def asked_cards(team: str) -> str:
    """Sorted set: cards a workspace's answers recommended, by count (the digest's focus)."""
    return f"{PREFIX}:asked:{team}"


def digest_subscriptions(team: str) -> str:
    """Hash: channel id -> digest subscription (JSON)."""
    return f"{PREFIX}:digest:subs:{team}"


def digest_teams() -> str:
    """Set of team ids with at least one digest subscription."""
    return f"{PREFIX}:digest:teams"


def digest_done(team: str, channel: str, period: str) -> str:
    """Set when a subscription's digest for a period has been posted: once per period."""
    return f"{PREFIX}:digest:done:{team}:{channel}:{period}"


def digest_lock(team: str, channel: str, period: str) -> str:
    return f"{PREFIX}:digest:lock:{team}:{channel}:{period}"


def digest_snapshot(team: str, channel: str) -> str:
    """Hash: price key -> the price shown in the subscription's previous digest."""
    return f"{PREFIX}:digest:snap:{team}:{channel}"


def feeds_fetched() -> str:
    """Set for FEED_INTERVAL_MINUTES after a fetch: one fetch per interval across processes."""
    return f"{PREFIX}:feeds:fetched"


def language(team: str) -> str:
    """Hash: "workspace" and "user:<id>" -> zh | en, from /gpusize lang."""
    return f"{PREFIX}:lang:{team}"


def user_locale(team: str, user: str) -> str:
    """A user's Slack locale, as a language, cached for a day (users.info include_locale)."""
    return f"{PREFIX}:locale:{team}:{user}"


def rate(name: str, team: str, subject: str) -> str:
    """Counter of one rate limit's window for a user or a workspace (bot.limits)."""
    return f"{PREFIX}:rate:{name}:{team}:{subject}"


def rate_attempt(name: str, team: str, subject: str, attempt: str) -> str:
    """The count one attempt got (bot.limits): counting the same attempt again returns it."""
    return f"{PREFIX}:rate:{name}:{team}:{subject}:{attempt}"


# -- prices
def prices_version(scope: str) -> str:
    """Counter bumped on every add or remove of a scope's prices: replicas rebuild their cached
    price book when it moves."""
    return f"{PREFIX}:prices:version:{scope}"


def admin_cache(team: str, user: str) -> str:
    """"1" or "0": whether a user is a workspace admin or owner (users.info), for a few
    minutes."""
    return f"{PREFIX}:admin:{team}:{user}"


# -- edge


def hub_new_model(team: str, user: str, repo_id: str) -> str:
    """Set while a user's new Hub repo id counts against the limit (bot.intake.NEW_HUB_MODELS):
    the same id again in that window is not counted twice."""
    return f"{PREFIX}:hubnew:{team}:{user}:{repo_id}"

# -- jobs

JOBS_GROUP = "answerers"  # the consumer group every bot process reads the job stream through


def jobs_stream() -> str:
    """Stream: acknowledged work not yet done (bot.jobs); an entry is deleted once it is done."""
    return f"{PREFIX}:jobs"


def job_memo(job_id: str) -> str:
    """Hash: step -> what that step of a job returned (a Slack ts, a store result), so a re-run
    after a crash replays it instead of repeating it; deleted when the job is done."""
    return f"{PREFIX}:jobmemo:{job_id}"


def job_active(owner: str) -> str:
    """Set: the stream ids of a member's jobs now in the stream (at most bot.jobs' share)."""
    return f"{PREFIX}:jobactive:{owner}"


def job_backlog(owner: str) -> str:
    """List: a member's recorded jobs waiting for a place in the stream, oldest first."""
    return f"{PREFIX}:jobbacklog:{owner}"


def jobs_backlogged() -> str:
    """Set: the members with a backlog (checked by every process's claim pass)."""
    return f"{PREFIX}:jobbacklogged"


def jobs_dead() -> str:
    """Stream: entries set aside (unreadable, or given up after their tries), newest kept."""
    return f"{PREFIX}:jobsdead"


def job_lease(job_id: str) -> str:
    """Which live process is running a job (its consumer name), for one claim period at a time,
    refreshed by its heartbeat: a second process never runs the same job at once."""
    return f"{PREFIX}:joblease:{job_id}"


def job_done(job_id: str) -> str:
    """Set when a job is done (with its XACK): a replay of its stream entry is not run again."""
    return f"{PREFIX}:jobdone:{job_id}"


def job_recorded(job_id: str) -> str:
    """Set when a job is recorded: resubmitting it (the outbox, after Redis did not confirm)
    lands it once."""
    return f"{PREFIX}:jobrec:{job_id}"


def command_seen(digest: str) -> str:
    """Set once per signed slash-command request (hash of its timestamp and body): a replay
    inside Slack's 5-minute window is answered once."""
    return f"{PREFIX}:cmd:{digest}"


def chart_cache(digest: str) -> str:
    """A chart's PNG (base64) and alt text (JSON) for a thread's inputs, kind and language."""
    return f"{PREFIX}:chart:{digest}"


def bot_identity(token_digest: str) -> str:
    """The bot's ids from auth.test (JSON), per token (a digest of it): read by a process that
    cannot reach Slack at start-up (bot.identity)."""
    return f"{PREFIX}:identity:{token_digest}"
