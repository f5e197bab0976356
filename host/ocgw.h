/*
 * ocgw.h -- the reference gateway `ocgw`: internal interfaces between its
 * files (not installed, not for embedders; they use ochost.h).
 *
 *   ocgw.c           main: CLI, life cycle, the loop (poll, process, humans)
 *   ocgw_channels.c  the served channels: configured, learned (resolved to
 *                    their members), discovered with gateway.runOnly
 *   ocgw_poll.c      reading them: cursors, back-off, one poll into the
 *                    queue, the queue's next message in posting order
 *   ocgw_config.c    host config (OpenClaw-shaped plugins + discord, agents,
 *                    humans, channels, gateway) with ${ENV} expansion
 *   ocgw_scenario.c  scripted models (per-agent scenario files), human
 *                    scripts, matching, {{var}} substitution
 *   ocgw_state.c     the gateway's durable state (cursors, journal of the
 *                    message in flight, scenario progress, totals): one JSON
 *                    file rewritten atomically after every step
 *   ocgw_run.c       one inbound message: message_received, decisions
 *                    (before_model_resolve), runs (prompt build, scripted
 *                    model, tools, agent_end, message_sending, POST)
 *   ocgw_check.c     preflight checks after loading the plugins, --check's summary
 *   ocgw_expect.c    --expect: a story's expected channel histories, files
 *                    and tool outcomes, checked against Discord itself
 *   ocgw_services.c  names and labels, transcript, REST count, learned
 *                    channels, OCGW_DIE_AT (used by ocgw.c, run, expect)
 *   ocgw_lookup.c    agents, humans and channels of a loaded config (used by
 *                    the config and scenario loaders)
 *   ocgw_slack.c     a Slack Web API caller per bot token (a Slack gateway's
 *                    agents and humans read and post with it)
 *   ocgw_slack_chan.c  a Slack channel's new messages (thread replies
 *                    included), members and posts, on ocgw_slack.c
 *   ocgw_util.c      small helpers
 *
 * Calls point one way (no file calls back into a file that calls it):
 * ocgw.c on top; ocgw_channels.c -> ocgw_poll.c -> ocgw_services.c;
 * ocgw_expect.c -> ocgw_run.c -> ocgw_services.c;
 * ocgw_config.c -> ocgw_scenario.c; below them ocgw_lookup.c and
 * ocgw_state.c -> ocgw_util.c; ocgw_slack_chan.c -> ocgw_slack.c beside
 * them; then the host core (ochost.h), discord/ and http/.
 *
 * One gateway serves one chat platform: Discord (the config's `discord`
 * block) or Slack (its `slack` block, cfg.slack). On Slack a message id is
 * its ts, a thread is the ts of its parent inside the channel (not a
 * channel of its own), and session keys are OpenClaw's
 * agent:<id>:slack:channel:<c lower-cased>[:thread:<ts>].
 *
 * Threading: ocgw is single-threaded (one loop on the main thread); only
 * the plugins' own threads run beside it, and they reach the gateway solely
 * through the host core (logging, session_patch), which is thread-safe.
 */
#ifndef OCGW_H
#define OCGW_H

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "buf.h"
#include "discord.h"
#include "ochost.h"

#define OCGW_SOURCE "ocgw"

typedef struct ocgw ocgw;             /* the gateway (below) */
typedef struct ocgw_slack ocgw_slack; /* one bot token's Slack Web API caller (ocgw_slack.c) */

/* ---- scenario (scripted model) ------------------------------------------------ */

/* When a step applies / a human speaks: every set field must hold.
 * Strings are owned; NULL means "any". */
typedef struct ocgw_match {
    char *channel;   /* "*", a channel alias ("work"), "@var", or a channel id */
    char *from;      /* "human", "moderator", "agent", an agent id, a human id, a user id */
    char **contains; /* every one must occur in the content (after {{var}} substitution) */
    size_t n_contains;
    int mentions_me; /* 1: the message mentions the agent running the step */
} ocgw_match;

typedef enum ocgw_action_kind {
    OCGW_ACT_REPLY = 0, /* text: the run's answer (posted unless silent) */
    OCGW_ACT_TOOL,      /* tool + params through the host core */
    OCGW_ACT_WRITE,     /* a file written into the agent's workspace */
    OCGW_ACT_SILENT     /* the model answers NO_REPLY */
} ocgw_action_kind;

typedef struct ocgw_action {
    ocgw_action_kind kind;
    char *text;     /* REPLY text, WRITE content */
    char *path;     /* WRITE: relative to the workspace */
    char *tool;     /* TOOL name */
    json_t *params; /* TOOL params (owned); strings get {{var}} substitution */
    json_t *bind;   /* TOOL: {"var": "detailsField"} (owned) or NULL */
    int retries;    /* TOOL: extra calls after an OC_ERR_IO result */
} ocgw_action;

typedef struct ocgw_step {
    char *name; /* for the transcript; "step N" when absent */
    ocgw_match when;
    ocgw_action *acts;
    size_t n_acts;
    int repeat; /* 1: may be used any number of times; default once */
} ocgw_step;

typedef struct ocgw_scenario {
    ocgw_step *steps;
    size_t n_steps;
} ocgw_scenario;

/* One scripted human message: posted once, in order, when `after` matches a
 * processed message (no `after`: as soon as the previous one is posted). */
typedef struct ocgw_human_step {
    int has_after;
    ocgw_match after;
    char *channel; /* alias, "@var" or id */
    char *content;
    int in_thread; /* Slack: a reply in the thread of the message `after` matched */
} ocgw_human_step;

/* ---- config --------------------------------------------------------------------- */

typedef struct ocgw_agent {
    char *id;
    char *workspace; /* absolute */
    char *user_id;   /* discordUserId, or slackUserId on a Slack gateway */
    char *token;     /* from the env variable tokenEnv; never logged */
    char *token_env;
    char *provider; /* model "provider/model" split */
    char *model;
    char *scenario_path; /* absolute; NULL: no scenario (every real run is silent) */
    char *system_prompt; /* NULL: a default */
    ocgw_scenario scen;
    dg_discord *dc; /* the agent's bot client; NULL when another gateway runs it */
    ocgw_slack *sc; /* the same on a Slack gateway (dc stays NULL) */
    int local;      /* 1: this gateway runs the agent (gateway.runOnly; default all) */
} ocgw_agent;

typedef struct ocgw_human {
    char *id;
    char *user_id;
    char *token; /* may be NULL when the human has no script */
    char *token_env;
    ocgw_human_step *steps;
    size_t n_steps;
    dg_discord *dc;
    ocgw_slack *sc; /* on a Slack gateway (dc stays NULL) */
    int local;      /* 1: this gateway posts the human's script (gateway.runOnly) */
} ocgw_human;

typedef struct ocgw_chan_cfg {
    char *alias; /* key of `channels` */
    char *id;
    char *parent_id; /* set: this channel is a thread of parent_id */
    char **agents;   /* agent ids that see it (default: all agents) */
    size_t n_agents;
    int from_start; /* 1: process the existing history at first start */
    int watch;      /* 1: no agent sees it; read and shown only (no hook, no run) */
} ocgw_chan_cfg;

typedef struct ocgw_config {
    json_t *root;      /* the expanded config (owned) */
    char *config_dir;  /* folder of the config file (absolute) */
    char *config_path; /* the config file (absolute); ocgw exports it to its plugins
                           * as OPENCLAW_CONFIG_PATH, the base of their relative paths */

    int slack; /* 1: the chat platform is Slack (the `slack` block), else Discord: ids,
                  session keys, reads and posts follow it */
    char *api_base;
    char *guild_id;          /* Discord only */
    char *moderator_user_id; /* NULL: moderator messages are not labelled */
    long timeout_ms;

    char *state_dir; /* absolute */
    long poll_ms;
    char *noreply_provider, *noreply_model;
    int log_level;
    int fsync;
    int claim_hooks;           /* gateway.claimHooks: offer before_agent_reply and
                                  reply_payload_sending (default true) */
    int agent_end_after_claim; /* gateway.agentEndAfterClaim: agent_end fires after
                                  a claimed run too (default true) */
    int split;                 /* gateway.runOnly names a subset: other gateways run
                                  the rest, so channels are also discovered by listing
                                  the guild's channels (another gateway's tool results
                                  never reach this one) */
    char *name;                /* gateway.name: prefix of every transcript line, so
                                  merged transcripts show which gateway ran what; NULL:
                                  none */

    ocgw_agent *agents;
    size_t n_agents;
    ocgw_human *humans;
    size_t n_humans;
    ocgw_chan_cfg *channels;
    size_t n_channels;
} ocgw_config;

/*
 * Read the host config file `path`, expand ${NAME} from the environment in
 * every string (an unset variable is an error naming it), check every key
 * ocgw owns (unknown keys refused, naming them), read the agents' tokens
 * from their env variables and their scenario files. `plugins` is left to
 * och_host_configure. On failure returns a negative oc_status with a
 * sentence in err; *out is then zeroed. Release with ocgw_config_free.
 */
int ocgw_config_load(const char *path, ocgw_config *out, char *err, size_t err_len);
void ocgw_config_free(ocgw_config *c);
/*
 * Which agents and scripted humans this gateway runs: `list` (borrowed) is
 * an array of their ids, or NULL for all of them; `where` names it in error
 * texts ("gateway.runOnly", "--run-only"). The others stay known (labels,
 * turn order, the plugin's agents) but need no token here. Applied by
 * ocgw_config_load to gateway.runOnly, and again by ocgw for --run-only.
 * OC_OK, or OC_ERR_INVALID with err naming the entry and the rule (an id of
 * neither, one listed twice, no agent at all, a local agent's or scripted
 * human's token variable unset); the config is then unchanged.
 */
int ocgw_config_run_only(ocgw_config *c, const json_t *list, const char *where, char *err,
                         size_t err_len);

const ocgw_agent *ocgw_agent_by_id(const ocgw_config *c, const char *id);
const ocgw_agent *ocgw_agent_by_user(const ocgw_config *c, const char *user_id);
const ocgw_human *ocgw_human_by_id(const ocgw_config *c, const char *id);
const ocgw_human *ocgw_human_by_user(const ocgw_config *c, const char *user_id);
const ocgw_chan_cfg *ocgw_chan_cfg_by_alias(const ocgw_config *c, const char *alias);
const ocgw_chan_cfg *ocgw_chan_cfg_by_id(const ocgw_config *c, const char *id);
/* A local agent among the ids of `agents` (a JSON array), starting at index
 * rot (round robin), whose token reads the channel; NULL when none of them
 * runs on this gateway (the channel is then not served here). */
const ocgw_agent *ocgw_local_reader(const ocgw_config *c, const json_t *agents, unsigned rot);
/* The reader of channel ch (its state object, may be NULL): a local agent
 * that sees it (ocgw_local_reader), or for a watched channel (channels.<x>.
 * watch: no agent sees it) any local agent, round robin from rot. NULL when
 * this gateway does not read it. */
const ocgw_agent *ocgw_chan_reader(const ocgw_config *c, const json_t *ch, unsigned rot);

/* Scenario file / human script parsing (ocgw_scenario.c). `what` names the
 * place for error texts. 0 or -1 with err. */
int ocgw_scenario_load(const char *path, ocgw_scenario *out, char *err, size_t err_len);
void ocgw_scenario_free(ocgw_scenario *s);
int ocgw_match_parse(const json_t *j, const char *what, ocgw_match *out, char *err, size_t err_len);
void ocgw_match_free(ocgw_match *m);

/* ---- state ------------------------------------------------------------------------ */

/* The gateway's durable state: a JSON document (see ocgw_state.c for the
 * layout) kept in memory and written to <stateDir>/ocgw-state.json. */
typedef struct ocgw_state {
    char *path;
    json_t *doc; /* owned */
    int fsync;
} ocgw_state;

/* Load (or create) the state file in dir. 0, or -1 with err (a malformed
 * file is refused, never overwritten). */
int ocgw_state_open(ocgw_state *st, const char *dir, int do_fsync, char *err, size_t err_len);
/* Write the document atomically (temp file, fsync, rename). 0 or -1 (logged
 * by the caller; the in-memory document stays authoritative). */
int ocgw_state_save(ocgw_state *st);
void ocgw_state_close(ocgw_state *st);

/* Borrowed sub-objects, created empty when missing. */
json_t *ocgw_state_obj(ocgw_state *st, const char *key);
/* totals[key] += by */
void ocgw_state_count(ocgw_state *st, const char *key, long by);
long ocgw_state_total(ocgw_state *st, const char *key);
/* vars[name] (borrowed string) or NULL. */
const char *ocgw_state_var(ocgw_state *st, const char *name);

/* ---- the gateway ---------------------------------------------------------------- */

/* A message as the gateway handles it (owned strings). */
typedef struct ocgw_msg {
    char *id, *channel_id, *thread_id, *author_id, *content;
    int author_bot;
    char **mentions;
    size_t n_mentions;
    int64_t queued_ms; /* when the poll that found it returned (not persisted):
                           * it is processed once every other channel was polled
                           * after that, so messages go out in the order posted */
} ocgw_msg;

void ocgw_msg_free(ocgw_msg *m);
/* From a message read over REST (a configured thread channel becomes
 * channel = parent, thread = the thread). */
void ocgw_msg_from_discord(ocgw *g, const dg_discord_message *dm, ocgw_msg *out);
/* JSON form for the journal: new reference. */
json_t *ocgw_msg_to_json(const ocgw_msg *m);
/* Back from the journal; 0 or -1. */
int ocgw_msg_from_json(const json_t *j, ocgw_msg *out);

/* Polling state of one served channel (ocgw_poll.c; not persisted: rebuilt
 * from the cursors at start). */
struct ocgw_chan_rt {
    char *id;
    int64_t next_ms;   /* next poll / learn attempt */
    long backoff_ms;   /* after failures; 0 when healthy */
    unsigned rot;      /* which member agent's token polls */
    int64_t polled_ms; /* start of the latest successful poll (0: none yet) */
    char queued[32];   /* highest id queued ("" = none; a Slack ts too) */
};

struct ocgw {
    ocgw_config cfg;
    och_host *host;
    ocgw_state st;
    volatile sig_atomic_t *stop;
    FILE *transcript; /* stdout unless --transcript FILE */
    int quiet;
    int verbose;        /* --verbose: also the gateway's internal lines (ocgw_detail) */
    long rest_requests; /* HTTP requests made by this process */
    const char *die_at; /* OCGW_DIE_AT (tests): "point:n" */
    int die_count;
    struct ocgw_chan_rt *rt;
    size_t n_rt, cap_rt;
    ocgw_msg *queue; /* polled, not yet processed; any channel */
    size_t n_queue, cap_queue;
    int64_t discover_ms;          /* next listing of the guild's channels (gateway.runOnly) */
    unsigned discover_rot;        /* which local agent's token lists them */
    struct ocgw_decider *decider; /* the config's `decisions` (ABI 1.2 decide), NULL: none */
};

/* ---- ocgw_decide.c: the scripted decision model (ABI 1.2 decide) ---- */

/*
 * The config's `decisions` {"answers": [...]} checked and taken: each
 * answer, used once in order, is {"label": <a label, "$first" (the first
 * asked) or "$nobody" ("nobody" when asked, else the first)>,
 * "probability": 0..1, "delayMs"?: 0..60000} or {"fail": "io" |
 * "unsupported", "delayMs"?}; past the last one decide fails (io). *out
 * NULL when the config has none. 0, or -1 with err naming the field.
 */
struct ocgw_decider;
int ocgw_decider_new(const json_t *root, struct ocgw_decider **out, char *err, size_t err_len);
void ocgw_decider_free(struct ocgw_decider *d);
/* och_decide_fn over d (user). Any thread. */
int ocgw_decide(void *user, const json_t *request, json_t **answer);

/* Label of a user id for the transcript: agent id, human id, "moderator",
 * or the id. Borrowed or static. */
const char *ocgw_who(const ocgw *g, const char *user_id);
/* Label of a channel: its alias or learned name, else the id. Borrowed. */
const char *ocgw_chan_label(ocgw *g, const char *channel_id);
/* Text for the transcript: <@id> -> @who, <#id> -> #label, one line of at
 * most max characters. malloc'd (NULL only when out of memory). */
char *ocgw_pretty(ocgw *g, const char *text, size_t max);
/* One transcript line (printf-style), flushed. */
void ocgw_say(ocgw *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same, only with --verbose: the gateway's internal lines (variables
 * bound, prompt context added, payloads cancelled after a claim). */
void ocgw_detail(ocgw *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Count REST requests (HTTP attempts) made by the gateway itself: reads
 * (polling, channel look-ups, story checks, made with some agent's token
 * but on nobody's behalf) ... */
void ocgw_rest(ocgw *g, int attempts);
/* ... and posts on behalf of `who` (an agent or human id), counted per poster. */
void ocgw_rest_post(ocgw *g, int attempts, const char *who);
/* Test hook: raise SIGKILL when OCGW_DIE_AT names this point and its count
 * is reached. */
void ocgw_maybe_die(ocgw *g, const char *point);

/* Resolve a channel reference ("work", "@var", id) to an id; NULL if not
 * (yet) known. Borrowed. */
const char *ocgw_channel_ref(ocgw *g, const char *ref);

/* True when `m` (a processed message) satisfies `w`; `agent` is the agent
 * asking (for mentionsMe) or NULL. */
int ocgw_match_msg(ocgw *g, const ocgw_match *w, const ocgw_msg *m, const ocgw_agent *agent);

/*
 * Substitute {{name}} in text: channel, message.id, agent, moderator,
 * user:<agent or human id>, channel:<alias>, result.<details field of the
 * last tool result>, lastError, and the gateway variables bound by tools.
 * run_vars (borrowed, may be NULL) holds the per-run names. Returns a
 * malloc'd string, or NULL with err naming the unknown variable.
 */
char *ocgw_subst(ocgw *g, const char *text, const json_t *run_vars, char *err, size_t err_len);

/* Channels the gateway serves (ocgw.c). */
/* The agents that see channel_id (borrowed JSON array of ids) or NULL. */
json_t *ocgw_channel_agents(ocgw *g, const char *channel_id);
/* Note a channel id from a tool result or a <#id> reference: served from
 * now on once its members are known (learning is retried by the loop).
 * by_agent: the agent that learned it (may be NULL); alias may be NULL. */
void ocgw_learn_channel(ocgw *g, const char *channel_id, const char *by_agent, const char *alias);

/* ---- processing one message (ocgw_run.c) ----------------------------------------- */

/* Save the state file; a failure is logged (a crash then would repeat
 * work), not returned: the gateway goes on. */
void ocgw_save_state(ocgw *g);
/* A Discord nonce: tag and 16 hex digits of a hash of a, b, c (out has
 * room for 26), so the same post after a crash gets the same nonce. */
void ocgw_nonce(char out[26], char tag, const char *a, const char *b, const char *c);

/*
 * Process the message in flight (state inflight) to the end: returns 0 when
 * done (cursor advanced, inflight cleared), 1 when it must be retried later
 * (a REST call failed for now; the journal keeps the progress), -1 on a
 * fatal error (logged).
 */
int ocgw_process_inflight(ocgw *g);
/* Start processing m (copied into the journal). */
int ocgw_begin_message(ocgw *g, const ocgw_msg *m);

/* Human scripts (ocgw_humans.c): mark the steps whose `after` matches m as
 * due (in the state, saved by the caller). */
void ocgw_humans_observe(ocgw *g, const ocgw_msg *m);
/* Post the due human messages; 0, or 1 to retry later. */
int ocgw_humans_fire(ocgw *g);
/* 1 when every human's script is posted. */
int ocgw_humans_done(ocgw *g);

/* ---- Slack (ocgw_slack.c, ocgw_slack_chan.c) ------------------------------------------------ */

/* Why a Slack call failed. */
typedef struct ocgw_slack_err {
    int attempts;      /* HTTP requests made */
    int retryable;     /* 1: the same call may succeed later (429, 5xx, transport) */
    char code[64];     /* Slack's error code ("not_in_channel"), or ours ("transport") */
    char message[300]; /* a sentence naming the method; "" on OC_OK */
} ocgw_slack_err;

/* A caller of <api_base>/<method> with a bot token (copied; wiped at free).
 * OC_OK and *out, or an error with err. */
int ocgw_slack_new(const char *api_base, const char *token, long timeout_ms, ocgw_slack **out,
                   char *err, size_t n);
void ocgw_slack_free(ocgw_slack *s);
/* The nonce of a post whose outcome is unknown (NULL: none), and whether
 * nonce is it: the next try of that post looks before posting. One per
 * caller (a bot token posts one message at a time). */
void ocgw_slack_doubt(ocgw_slack *s, const char *nonce);
int ocgw_slack_doubted(const ocgw_slack *s, const char *nonce);
/* One method with args (NULL-terminated name/value pairs, a NULL name ends
 * them early). OC_OK with *answer (a new reference, the caller decrefs), or
 * OC_ERR_IO (e->retryable) / OC_ERR_INVALID with e filled. */
int ocgw_slack_call(ocgw_slack *s, const char *method, const char *const *args, json_t **answer,
                    ocgw_slack_err *e);
/* A Slack message object (history or replies) of channel_id as the gateway
 * handles it: id = ts, thread_id = thread_ts for a reply, mentions from
 * <@U...>. Owned strings (ocgw_msg_free). */
void ocgw_msg_from_slack(const json_t *sm, const char *channel_id, ocgw_msg *out);
/* The newest ts of the channel (a top-level message or a thread reply), "0"
 * when empty, into out. */
int ocgw_slack_latest(ocgw_slack *sc, const char *channel_id, char *out, size_t out_len,
                      ocgw_slack_err *e);
/* The channel's messages with ts above `after` ("0": all), thread replies
 * included, oldest first (*out malloc'd, each ocgw_msg_free'd by the
 * caller), up to *bound: the highest ts surely complete (the next poll
 * starts there). See ocgw_slack_chan.c for what it cannot see. */
int ocgw_slack_poll(ocgw_slack *sc, const char *channel_id, const char *after, ocgw_msg **out,
                    size_t *n_out, char *bound, size_t bound_len, ocgw_slack_err *e);
/* conversations.info's channel object and its members (user ids): new
 * references, or NULL with an error. */
int ocgw_slack_channel(ocgw_slack *sc, const char *channel_id, json_t **info, json_t **members,
                       ocgw_slack_err *e);
/* chat.postMessage of text (thread_ts NULL: top level) with the nonce in
 * its metadata; *ts_out (may be NULL) gets the new ts, malloc'd. */
int ocgw_slack_post(ocgw_slack *sc, const char *channel_id, const char *thread_ts, const char *text,
                    const char *nonce, char **ts_out, ocgw_slack_err *e);

/* ---- the served channels (ocgw_channels.c) and reading them (ocgw_poll.c) ---- */

/* Configured channels into the state (first start) and their runtime. */
void ocgw_install_channels(ocgw *g);
/* A learned channel (state entry ch, "pending" until resolved): its
 * members asked from the platform once due; then served or dropped. */
void ocgw_resolve_learned(ocgw *g, const char *id, json_t *ch, int64_t now);
/* gateway.runOnly: list the guild's channels when due and learn the new
 * private ones some agent sees. */
void ocgw_discover_channels(ocgw *g, int64_t now);
/* The polling state of channel id, made on first use (NULL when out of
 * memory); owned by g. */
struct ocgw_chan_rt *ocgw_rt_of(ocgw *g, const char *id);
/* A failed poll of r: back off (doubling, at most 5 s). */
void ocgw_rt_failed(ocgw *g, struct ocgw_chan_rt *r, int64_t now);
/* First start: a configured channel is read from its latest message on
 * (or from its start with fromStart). */
void ocgw_init_cursor(ocgw *g, const char *id, json_t *ch, int64_t now);
/* One poll of channel id when due: its new messages into g's queue. */
void ocgw_poll_channel(ocgw *g, const char *id, json_t *ch, int64_t now);
/* The queued message next posted into *out (the caller frees it with
 * ocgw_msg_free); 1 when filled, 0 when none is surely next yet. */
int ocgw_dequeue(ocgw *g, ocgw_msg *out, int64_t now);

/* ---- --expect (ocgw_expect.c) ------------------------------------------------------ */

typedef struct ocgw_expect {
    json_t *doc; /* owned */
    long timeout_ms;
    long settle_ms;
} ocgw_expect;

int ocgw_expect_load(const char *path, ocgw_expect *out, char *err, size_t err_len);
void ocgw_expect_free(ocgw_expect *e);
/*
 * Check the story against Discord (full channel histories fetched now),
 * the workspaces and the journal of tool outcomes. Returns 1 when every
 * expectation holds exactly, 0 while it is incomplete but nothing contradicts
 * it yet, -1 when something contradicts it (an unexpected or missing
 * message in the middle, a duplicate). why receives the first difference.
 * When verbose, prints the report to the transcript.
 */
int ocgw_expect_check(ocgw *g, const ocgw_expect *e, int verbose, char *why, size_t why_len);

/* ---- preflight (ocgw_check.c) ----------------------------------------------------------- */

/* After och_host_load: log each cost-burning mistake (an enabled entry whose
 * plugin did not load, plugins.allow naming no plugin, gateway.noReply or
 * discord.apiBase differing from a plugin's) at error level; 1 when any. */
int ocgw_preflight(ocgw *g);
/* --check only: each enabled plugin entry with discord.moderatorUserId must
 * have a moderator token (env DIRIGENT_MODERATOR_TOKEN, else its
 * discord.moderatorToken) that Discord accepts for that user (GET
 * /users/@me); each failure is logged at error level. 1 when any. */
int ocgw_check_moderators(ocgw *g);
/* The one summary line of a good --check (what loaded, tools, hooks,
 * agents, channels) on f. */
void ocgw_check_summary(ocgw *g, FILE *f);

/* ---- helpers (ocgw_util.c) ---------------------------------------------------------- */

int64_t ocgw_now_ms(void);
void ocgw_sleep_ms(long ms);
char *ocgw_strdup(const char *s);
/* 64-bit FNV-1a over the NUL-separated parts (NULL-terminated list). */
uint64_t ocgw_hash(const char *first, ...);
/* mkdir -p; 0 or -1 (errno). */
int ocgw_mkdirs(const char *path, mode_t mode);
/* Write data to path atomically (temp, fsync if asked, rename). 0 or -1. */
int ocgw_write_file(const char *path, const char *data, size_t len, int do_fsync);
/* Read a whole file (malloc'd, NUL-terminated) or NULL. */
char *ocgw_read_file(const char *path, size_t *len);
/* Absolute form of path taken from base (malloc'd). */
char *ocgw_abspath(const char *base, const char *path);
/* True when the text is OpenClaw's silent answer (NO_REPLY rules). */
int ocgw_is_silent(const char *text);
/* Shorten text to one line of at most max characters for the transcript
 * (malloc'd). */
char *ocgw_oneline(const char *text, size_t max);
/* The demo's value in one line, from the run counters: runs made, of which
 * `avoided` never reached a real model (claimed or swapped to the no-reply
 * model). malloc'd (NULL only when out of memory); the caller frees it. */
char *ocgw_value_line(long runs, long avoided);

/* The value line against OpenClaw alone: alone runs it would have made (one
 * model call each), made with the plugin; when the plugin made more, says
 * how many more. Caller frees. */
char *ocgw_value_line_made(long alone, long made);
/* Order of two message ids: Discord snowflakes or Slack ts ("1712345678.123456"),
 * by value; <0, 0, >0. */
int ocgw_id_cmp(const char *a, const char *b);
/* 1 when id is a channel id of the gateway's platform (a snowflake on
 * Discord, C/G/D... on Slack). */
int ocgw_chan_id_valid(const ocgw *g, const char *id);
/* The gateway's channel table key of m: on Discord the thread when in one
 * (a Discord thread is a channel), on Slack always the channel (a Slack
 * thread is a ts within it). Borrowed from m. */
const char *ocgw_chan_key(const ocgw *g, const ocgw_msg *m);
/* Every <@id> / <@!id> user mention in text (Slack's <@U...> and
 * <@U...|name> too): a new JSON array of ids. */
json_t *ocgw_user_mentions(const char *text);
/* Every <#id> channel reference in text (Slack's <#C...|name> too): a new
 * JSON array of ids. */
json_t *ocgw_channel_refs(const char *text);

#endif
