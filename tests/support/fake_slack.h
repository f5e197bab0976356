/*
 * fake_slack.h -- an in-process fake of Slack's Web API for tests, benches
 * and manual runs (a standalone binary can wrap it as build/fake-discord
 * wraps fake_discord.h).
 *
 * Loopback only (127.0.0.1), libmicrohttpd with one thread per connection,
 * so a delayed answer never blocks other requests. Internally locked: every
 * function may be called from any thread while the server runs.
 *
 * Base URL: http://127.0.0.1:<port>/api (Slack's is https://slack.com/api;
 * a client appends "/<method>", a trailing '/' in its base is fine: the
 * fake takes "/api/<method>" and "/api//<method>" alike).
 *
 * Requests: POST (or GET with a query) /api/<method>; arguments from the
 * query, an application/x-www-form-urlencoded body or an application/json
 * body, merged into one object (body wins). The token comes from
 * "Authorization: Bearer <token>" or a "token" argument. Every answer is
 * HTTP 200 with {"ok":true,...} or {"ok":false,"error":"<code>"} (plus
 * "needed"/"provided" for missing_scope), except an injected 429 (HTTP 429,
 * Retry-After: <seconds>, {"ok":false,"error":"ratelimited"}) or 500.
 * An answer to a known token carries Slack's x-oauth-scopes header: the
 * token's scopes, comma-separated (every scope the fake knows when its
 * spec lists none). Token errors: none -> not_authed, unknown -> invalid_auth, an app-level
 * token (fake_slack_add_app_token) on a built-in method ->
 * not_allowed_token_type. A method no handler knows -> unknown_method.
 *
 * Built-in methods (bot tokens; the scope each needs in brackets; a user's
 * scopes are all of them unless fake_slack_user_spec.scopes lists some):
 *   auth.test             {url, team, user, team_id, user_id, bot_id?}
 *   users.info            user= -> {user:{id, team_id, name, real_name,
 *                         is_bot, profile:{bot_id?, display_name, real_name}}}
 *                         [users:read]; user_not_found
 *   chat.postMessage      channel=, text=, thread_ts=?, metadata=? (object or
 *                         JSON text {event_type, event_payload}) -> {channel,
 *                         ts, message} [chat:write]; channel_not_found,
 *                         not_in_channel, is_archived, no_text, msg_too_long
 *                         (text above 40,000 characters), thread_not_found,
 *                         invalid_metadata_format
 *   conversations.create  name=, is_private=? -> {channel} [channels:manage,
 *                         private: groups:write]; name_taken, invalid_name_*
 *                         (Slack's rules: lowercase letters, digits, '-',
 *                         '_', at most 80 characters); the creator is a member
 *   conversations.invite  channel=, users=U1,U2 -> {channel} [channels:manage
 *                         / groups:write]; not_in_channel, user_not_found,
 *                         already_in_channel (only when every user is one),
 *                         cant_invite_self, is_archived
 *   conversations.archive channel= [channels:manage / groups:write];
 *                         already_archived, not_in_channel
 *   conversations.info    channel= -> {channel} [channels:read / groups:read]
 *   conversations.history channel=, limit=? (1..999, default 100), oldest=?,
 *                         latest=?, inclusive=?, cursor=?,
 *                         include_all_metadata=? -> {messages (newest
 *                         first, top level and thread parents only), has_more,
 *                         response_metadata:{next_cursor}} [channels:history /
 *                         groups:history]; metadata only with
 *                         include_all_metadata=true (or 1)
 *   conversations.replies channel=, ts=, limit=?, cursor=? -> the parent then
 *                         its replies, oldest first [channels:history /
 *                         groups:history]; thread_not_found
 *   conversations.members channel=, limit=?, cursor=? -> {members,
 *                         response_metadata} [channels:read / groups:read]
 *   conversations.list    types=? (public_channel,private_channel; default
 *                         public), exclude_archived=?, limit=?, cursor=? ->
 *                         {channels, response_metadata} [channels:read, and
 *                         groups:read for private]; private ones only to members
 * A private channel is visible only to its members (anyone else gets
 * channel_not_found, as from Slack); a public one to every bot, but posting
 * needs membership (not_in_channel). Message ts: "<seconds>.<6 digits>",
 * strictly increasing across the whole fake. Stored bot messages carry
 * user, bot_id, app_id and "bot_profile"-less Slack fields; human ones user.
 *
 * Control endpoints (no token; JSON in and out):
 *   GET    /_fake/health                 {"ok":true,"team":...}
 *   GET    /_fake/requests[?since=SEQ]   recorded Web API requests (below)
 *   DELETE /_fake/requests               forget them
 *   GET    /_fake/messages[?channel=ID]  stored messages oldest first, each
 *                                        with "channel" (and metadata)
 *   POST   /_fake/messages               {channel, user, text, thread_ts?}
 *                                        a human speaking; no checks
 *   GET    /_fake/channels               every channel object (+ members)
 *   POST   /_fake/channels               {id?, name, is_private?, members?}
 *   POST   /_fake/users                  {user_id, name?, token?, bot?,
 *                                        bot_id?, app_id?, scopes?}
 *   POST   /_fake/app-tokens             {token, app_id}
 *   POST   /_fake/faults                 {method, kind, count?, retryAfter?,
 *                                        delayMs?, error?}
 *   DELETE /_fake/faults                 forget queued faults
 * A recorded request: {"seq", "tMs" (CLOCK_MONOTONIC ms at arrival),
 * "httpMethod", "method" (the API method, e.g. "chat.postMessage"),
 * "authorization" (the header as sent, or null), "token" (the token used,
 * from the header or the arguments, or null), "userId" (its user, or null),
 * "contentType", "args" (the merged arguments object), "body" (the raw
 * body text, or null), "status" (HTTP; 0 while unanswered, -1 dropped),
 * "ok" (true/false, null when not answered with JSON), "error" (Slack's
 * error code or null), "fault" (kind name or null)}.
 */
#ifndef DG_FAKE_SLACK_H
#define DG_FAKE_SLACK_H

#include <stddef.h>
#include <jansson.h>

typedef struct fake_slack fake_slack;

#define FAKE_SLACK_MAX_TEXT 40000 /* chat.postMessage text, characters: msg_too_long */

/* Injected faults, consumed in the order added. "_AFTER" kinds run the
 * method first (a message is stored) and then misbehave: Slack did it, the
 * client never heard. */
typedef enum fake_slack_fault_kind {
    FS_FAULT_429 = 0,     /* HTTP 429, Retry-After: retry_after_s, {"ok":false,
                             "error":"ratelimited"}; not processed */
    FS_FAULT_ERROR,       /* HTTP 200 {"ok":false,"error":<error>}; not processed */
    FS_FAULT_500,         /* HTTP 500, not processed */
    FS_FAULT_DELAY,       /* wait delay_ms, then process and answer normally */
    FS_FAULT_DROP,        /* close the connection without an answer, not processed */
    FS_FAULT_DROP_AFTER,  /* process, then close without an answer */
    FS_FAULT_DELAY_AFTER, /* process, wait delay_ms, then answer */
    FS_FAULT_KIND_COUNT
} fake_slack_fault_kind;

/* "429", "error", "500", "delay", "drop", "dropafter", "delayafter". Static. */
const char *fake_slack_fault_name(fake_slack_fault_kind k);

/* Kind by name (as above); -1 when unknown. */
int fake_slack_fault_parse(const char *name);

typedef struct fake_slack_options {
    int port;              /* 0: any free port */
    const char *team_id;   /* NULL: "T00000001" */
    const char *team_name; /* NULL: "dirigent-test" */
    long latency_us;       /* > 0: every Web API answer leaves this long after its
                              request was handled (the connection's thread sleeps
                              without the lock); 0: at once */
} fake_slack_options;

/* Start the server (o may be NULL for defaults). Returns 0 and *out (free
 * with fake_slack_stop), or -1 with a reason in err. */
int fake_slack_start(const fake_slack_options *o, fake_slack **out, char *err, size_t err_len);

/* Stop: ends delayed answers at once, closes connections, joins threads,
 * frees everything. No listener is called once stop has begun. NULL is
 * fine. */
void fake_slack_stop(fake_slack *fs);

int fake_slack_port(const fake_slack *fs);

/* "http://127.0.0.1:PORT/api"; borrowed, valid until stop. */
const char *fake_slack_url(const fake_slack *fs);

/* The team id; borrowed, valid until stop. */
const char *fake_slack_team_id(const fake_slack *fs);

/* A workspace member. Strings are copied. */
typedef struct fake_slack_user_spec {
    const char *user_id; /* required: "U" or "W" then 2..20 of [A-Z0-9] */
    const char *name;    /* NULL: the user id in lower case */
    const char *token;   /* NULL: no API access (a human); else its token (a bot's
                            "xoxb-..."; any text is accepted, so tests can use
                            odd ones) */
    int bot;             /* 1: a bot user: bot_id and app_id below */
    const char *bot_id;  /* NULL: "B" + user_id without its first letter */
    const char *app_id;  /* NULL: "A" + user_id without its first letter */
    const char *scopes;  /* comma list of the token's scopes; NULL: every scope */
} fake_slack_user_spec;

/* Add a user, or replace the one with the same id (its token too). 0, or
 * -1 for a bad id or no memory. */
int fake_slack_add_user(fake_slack *fs, const fake_slack_user_spec *u);

/* An app-level token ("xapp-...") of app_id, for methods a test adds with
 * fake_slack_add_method (Socket Mode's apps.connections.open); the
 * built-in methods answer not_allowed_token_type to it. 0 or -1. */
int fake_slack_add_app_token(fake_slack *fs, const char *token, const char *app_id);

/* A channel. id NULL: a new "C..." id. name: Slack's rules (as
 * conversations.create checks them). members: NULL-terminated user ids
 * (may be NULL), each must exist. The id is written to id_out (>= 16
 * bytes; may be NULL). 0, or -1 (bad or duplicate id or name, unknown
 * member). */
int fake_slack_add_channel(fake_slack *fs, const char *id, const char *name, int is_private,
                           const char *const *members, char *id_out);

/* Put a message into a channel as user_id without any check (a human
 * speaking; no metadata). thread_ts NULL: top level. The new ts goes to
 * ts_out (>= 24 bytes; may be NULL). Listeners are called as for a post.
 * 0, or -1 for an unknown channel or thread. */
int fake_slack_inject(fake_slack *fs, const char *channel_id, const char *user_id, const char *text,
                      const char *thread_ts, char *ts_out);

/* Queue a fault for the next `count` Web API requests of method ("*": any
 * method; "chat.postMessage"). retry_after_s: the 429's Retry-After header
 * (whole seconds, as Slack sends; < 1: 1). delay_ms for the delay kinds.
 * error: the error code of FS_FAULT_ERROR (NULL: "internal_error").
 * Returns 0 or -1. */
int fake_slack_add_fault(fake_slack *fs, const char *method, fake_slack_fault_kind kind, int count,
                         int retry_after_s, long delay_ms, const char *error);

/* Forget queued faults. */
void fake_slack_clear_faults(fake_slack *fs);

/* Recorded Web API requests (not the control endpoints) as a NEW JSON
 * array (caller decrefs), seq greater than `since` (0: all). */
json_t *fake_slack_requests(fake_slack *fs, long since);

/* Number of recorded Web API requests; of one API method when method is
 * not NULL. */
size_t fake_slack_request_count(fake_slack *fs, const char *method);

/* Forget recorded requests (seq keeps counting). */
void fake_slack_clear_requests(fake_slack *fs);

/* Wait until at least n requests were recorded; 0, or -1 on timeout. */
int fake_slack_wait_requests(fake_slack *fs, size_t n, long timeout_ms);

/* Messages of a channel (NULL: every channel) oldest first, as a NEW JSON
 * array of Slack message objects with "channel" added and metadata kept
 * (caller decrefs). Thread replies included (they carry thread_ts). */
json_t *fake_slack_messages(fake_slack *fs, const char *channel_id);

/* Number of messages in a channel (NULL: all), replies included. */
size_t fake_slack_message_count(fake_slack *fs, const char *channel_id);

/* Wait until a channel (NULL: all) holds at least n messages; 0 or -1. */
int fake_slack_wait_messages(fake_slack *fs, const char *channel_id, size_t n, long timeout_ms);

/* The channel object (conversations.info's, with "members" added) as a NEW
 * reference, or NULL when unknown. */
json_t *fake_slack_channel(fake_slack *fs, const char *channel_id);

/* Every channel object as a NEW JSON array. */
json_t *fake_slack_channels(fake_slack *fs);

/* Id of the channel named name into id_out (>= 16 bytes); 0 or -1. */
int fake_slack_channel_by_name(fake_slack *fs, const char *name, char *id_out);

/* ---- extension points (Socket Mode and other methods) --------------------------------- */

/* One Web API request as an added method handler sees it. All borrowed,
 * valid during the call only. */
typedef struct fake_slack_call {
    const char *method;  /* "apps.connections.open" */
    const char *token;   /* the token as sent (header or argument), or NULL */
    const char *user_id; /* the bot user of a bot token, else NULL */
    const char *app_id;  /* the app of a bot or app-level token, else NULL */
    const json_t *args;  /* the merged arguments (query, form or JSON body) */
} fake_slack_call;

/*
 * An added method: returns the answer as a NEW reference (an object; "ok":
 * true is added when it has no "ok"), or NULL for HTTP 500. *http_status
 * starts at 200 and may be changed. Called on the connection's thread
 * without the fake's lock held: it may call any fake_slack_* function.
 * Faults (fake_slack_add_fault) and recording apply as to built-in methods.
 */
typedef json_t *(*fake_slack_method_fn)(void *ud, const fake_slack_call *call, int *http_status);

/* Serve method with fn (ud passed through), before the built-in methods:
 * adding a built-in name replaces it. Re-adding a name replaces its
 * handler. Up to 32 methods. 0, or -1 (full, bad name, no memory). */
int fake_slack_add_method(fake_slack *fs, const char *method, fake_slack_method_fn fn, void *ud);

/* What happened, for listeners. All borrowed, valid during the call only. */
typedef struct fake_slack_event {
    const char *type;           /* "message" (a post or an injected message),
                                   "member_joined_channel" (conversations.invite or
                                   create: user is the one who joined) */
    const char *channel_id;     /* the channel */
    const char *channel_type;   /* "channel" (public) or "group" (private), as
                                   Slack's message events say */
    const char *user_id;        /* the author, or the user who joined */
    const json_t *message;      /* "message": the stored message as
                                   conversations.history shows it (metadata
                                   included), with "channel"; else NULL */
    const char *const *members; /* the channel's members at that moment */
    size_t n_members;
} fake_slack_event;

/*
 * Listener of events. Called once per event, in the order the events
 * happened, on the thread of a request (or fake_slack_inject caller) that
 * produced an event -- not necessarily the one that produced this event --
 * without the fake's lock held; it may call any fake_slack_* function
 * (events it causes are delivered after it returns). Listeners must be
 * added before traffic starts.
 */
typedef void (*fake_slack_event_fn)(void *ud, const fake_slack_event *ev);

/* Add a listener (up to 8). 0 or -1. */
int fake_slack_on_message(fake_slack *fs, fake_slack_event_fn fn, void *ud);

#endif
