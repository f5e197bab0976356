/*
 * fake_discord.h -- an in-process fake of the Discord REST API (v10) for
 * tests, the demo and manual runs (build/fake-discord wraps it).
 *
 * Loopback only (127.0.0.1), libmicrohttpd with one thread per connection,
 * so a delayed answer never blocks other requests. Internally locked: every
 * function may be called from any thread while the server runs.
 *
 * Base URL: http://127.0.0.1:<port>/api/v10 (the "/api/v10" prefix is
 * optional in request paths). Discord endpoints:
 *   POST /guilds/{guild}/channels      create a channel (name rules, overwrites)
 *   GET  /guilds/{guild}/channels      every channel of the guild
 *   GET  /channels/{id}                the channel object
 *   DELETE /channels/{id}              delete it (and its messages)
 *   POST /channels/{id}/messages       post (content <= 2000, nonce <= 25,
 *                                      enforce_nonce, allowed_mentions)
 *   GET  /channels/{id}/messages       ?after=&before=&limit= (newest first,
 *                                      like Discord)
 *   GET  /channels/{id}/messages/{m}   one message (404 10008 when unknown)
 *   PATCH /channels/{id}/messages/{m}  edit own message's content (else 403
 *                                      50005); MESSAGE_UPDATE dispatched
 *   DELETE /channels/{id}/messages/{m} 204; MESSAGE_DELETE dispatched
 *   POST /channels/{id}/typing         204
 *   PUT|DELETE /channels/{id}/thread-members/@me   204 (membership not modelled)
 *   GET  /guilds/{id}/threads/active   {threads, members: []}
 *   PUT|DELETE /channels/{id}/messages/{m}/reactions/{emoji}/@me   204
 *   POST /channels/{id}/threads        {name}: a public thread (type 11)
 *   POST /channels/{id}/messages/{m}/threads   {name}: thread id = message id
 *   GET  /gateway, /gateway/bot        {url:"ws://127.0.0.1:PORT", shards:1,
 *                                      session_start_limit} (/gateway: no token)
 *   GET  /users/@me (also /users/%40me), /users/{id}
 *   GET  /oauth2/applications/@me, /applications/@me   application = bot user id
 *   GET|PUT|POST /applications/{app}[/guilds/{g}]/commands, GET|PATCH|DELETE
 *        .../commands/{cmd}           stored per application and echoed
 *   GET  /guilds/{id}, /guilds/{id}/roles (@everyone, id = guild id),
 *        /guilds/{id}/members, /guilds/{id}/members/{user} (404 10007)
 * Any other route answers 404 {"message":"404: Not Found","code":0} and is
 * recorded like every request, so a client's unexpected calls show.
 *
 * Gateway (websocket, same port, path "/", ?v=10&encoding=json; compress=
 * or another version/encoding is refused with 400): HELLO (op 10) on
 * connect; op 1 -> op 11; IDENTIFY (op 2) with a registered bot token ->
 * READY (s 1) + GUILD_CREATE (channels, threads, members, @everyone role,
 * voice_states []), unknown token -> close 4004; op 3/4/8 accepted
 * silently; RESUME (op 6) of a known session of that token replays the
 * missed dispatches then RESUMED, else op 9 d:false; other ops before
 * IDENTIFY -> 4003, bad JSON -> 4002, unknown op -> 4001, IDENTIFY twice
 * -> 4005. Frames: client frames must be masked (else 1002); fragments,
 * ping/pong and the close handshake are honoured; a message above 64 KiB
 * -> 1009. Dispatches: MESSAGE_CREATE for every stored message (REST or
 * injected) to every session whose user can see the channel (VIEW_CHANNEL
 * as above; threads follow their parent), the author's own included;
 * CHANNEL_CREATE/CHANNEL_DELETE, THREAD_CREATE likewise. Sessions outlive
 * their socket (for RESUME) until stop; each keeps its last 1000 events.
 * Websocket upgrades are not in /_fake/requests; /_fake/gateway shows them.
 *
 * Every Discord request needs "Authorization: Bot <token>" with a token
 * registered by fake_discord_add_user (else 401); the message author is that
 * token's user. Errors have Discord's shape {"message":..., "code":...}
 * (400 50035 "Invalid Form Body" with "errors", 400 50006, 401 0, 403 50001
 * / 50013, 404 10003 / 10004, 429 with retry_after and global). Channels
 * whose @everyone overwrite denies VIEW_CHANNEL are private: only users with
 * a member overwrite allowing VIEW_CHANNEL (and SEND_MESSAGES to post) get
 * in, others get 403 "Missing Access" (switch off with no_permission_checks).
 * Successful answers carry X-RateLimit-* headers of a per-route bucket
 * (generous unless fake_discord_set_rate_limit says otherwise).
 *
 * Control endpoints (no Authorization; JSON in and out):
 *   GET    /_fake/health                 {"ok":true,"guildId":...}
 *   GET    /_fake/requests[?since=SEQ]   recorded Discord requests (see below)
 *   DELETE /_fake/requests               forget them
 *   GET    /_fake/messages[?channel=ID]  messages oldest first (all channels
 *                                        when no channel is given)
 *   POST   /_fake/messages               {channelId | threadId, authorId, content,
 *                                        mentions?: [user ids] (besides <@id> in
 *                                        content), createThread?: name} inject a
 *                                        message (a human speaking), no checks;
 *                                        dispatched like a posted one; with
 *                                        createThread the answer has "thread"
 *   POST   /_fake/threads                {channelId, name, messageId?, ownerId?}
 *   GET    /_fake/gateway                one entry per open websocket: {userId,
 *                                        sessionId, seq, identified, connectedAtMs
 *                                        (CLOCK_MONOTONIC)}; ids null before IDENTIFY
 *   GET    /_fake/channels               every channel object
 *   POST   /_fake/channels               {id?, name?, guildId?, type?, topic?,
 *                                        permission_overwrites?} pre-create one
 *   POST   /_fake/users                  {token, userId, bot?, username?}; a human
 *                                        (bot:false) may come without a token
 *   POST   /_fake/faults                 {route, kind, count?, retryAfter?, delayMs?}
 *   DELETE /_fake/faults                 clear faults and the fail rate
 *   POST   /_fake/fail-rate              {rate, seed?, retryAfter?}
 *   POST   /_fake/rate-limit             {limit, windowSec}
 *   POST   /_fake/roles                  {id, name?, permissions, members?: [user
 *                                        ids]}: a guild role given to those members
 * A recorded request: {"seq", "tMs" (CLOCK_MONOTONIC ms at arrival), "method",
 * "path" (without /api/v10 and query), "query", "route" (template, e.g.
 * "POST /channels/{id}/messages"), "authorization", "authUserId" (null when
 * unknown), "userAgent", "contentType", "body" (parsed JSON, or the text when
 * it is not JSON, or null), "status" (0 while unanswered, -1 dropped),
 * "fault" (kind name or null), "clientPort" (the client's TCP port: equal
 * ports mean one reused connection)}.
 */
#ifndef DG_FAKE_DISCORD_H
#define DG_FAKE_DISCORD_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

typedef struct fake_discord fake_discord;

/* Injected faults. "_AFTER" kinds process the request first (a message is
 * stored) and then misbehave: Discord accepted, the client never heard. */
typedef enum fake_discord_fault_kind {
    FD_FAULT_429 = 0,     /* 429 route limit: retry_after + rate-limit headers; not processed */
    FD_FAULT_GLOBAL_429,  /* 429 global (X-RateLimit-Global: true, scope global) */
    FD_FAULT_500,         /* 500, not processed */
    FD_FAULT_500_AFTER,   /* processed, then 500 */
    FD_FAULT_403,         /* 403 "Missing Permissions" code 50013, not processed */
    FD_FAULT_DELAY,       /* wait delay_ms, then process and answer normally */
    FD_FAULT_DELAY_AFTER, /* process, wait delay_ms, then answer */
    FD_FAULT_DROP,        /* close the connection without an answer, not processed */
    FD_FAULT_DROP_AFTER,  /* process, then close without an answer */
    FD_FAULT_SHAPE_AFTER, /* process, then answer 200 with JSON of the other shape
                           * (an object where an array belongs, and the reverse) */
    FD_FAULT_KIND_COUNT
} fake_discord_fault_kind;

/* "429", "global429", "500", "500after", "403", "delay", "delayafter", "drop",
 * "dropafter", "shapeafter". Static strings. */
const char *fake_discord_fault_name(fake_discord_fault_kind k);

/* Kind by name (as above); -1 when unknown. */
int fake_discord_fault_parse(const char *name);

typedef struct fake_discord_options {
    int port;                 /* 0: any free port */
    const char *guild_id;     /* NULL: "100000000000000001" */
    int no_permission_checks; /* 1: private channels are open to every user */
    int quiet;                /* reserved for the CLI; the library never prints */
    long heartbeat_ms;        /* gateway HELLO heartbeat_interval; 0: 41250 */
    int lean;                 /* 1 (benches): a posted message is answered in full but
                                  only its id, author and nonce are kept (enforce_nonce
                                  works, answering {"id"} of the first message only;
                                  message counts work; GET of messages, edits,
                                  listings and gateway dispatches do not see it), and
                                  Discord requests are counted, not recorded. Keeping
                                  every message and request grew the heap on every post
                                  (page faults were most of the fake's CPU) */
    long latency_us;          /* > 0: every REST answer leaves this long after its
                                  request was handled, as over a network to Discord. The
                                  connection's thread sleeps (no CPU, the server lock
                                  not held: other connections go on); stop ends the
                                  sleep at once. 0: answer at once */
} fake_discord_options;

/* Start the server (o may be NULL for defaults). Returns 0 and *out (free
 * with fake_discord_stop), or -1 with a reason in err. */
int fake_discord_start(const fake_discord_options *o, fake_discord **out, char *err,
                       size_t err_len);

/* Stop: ends delayed answers at once, closes connections, joins threads,
 * frees everything. NULL is fine. */
void fake_discord_stop(fake_discord *fd);

int fake_discord_port(const fake_discord *fd);

/* "http://127.0.0.1:PORT/api/v10"; borrowed, valid until stop. */
const char *fake_discord_url(const fake_discord *fd);

/* The guild id; borrowed, valid until stop. */
const char *fake_discord_guild_id(const fake_discord *fd);

/* Map token -> user id (a guild member). Re-adding a token replaces its user.
 * username may be NULL. token may be NULL for a human (bot 0): a member
 * with a name and no API access. Returns 0, or -1 for a bad id or no memory. */
int fake_discord_add_user(fake_discord *fd, const char *token, const char *user_id,
                          const char *username, int bot);

/* Pre-create a public text channel in the guild. id NULL: a new snowflake.
 * name NULL: "general". The id is written to id_out (>= 24 bytes, may be
 * NULL). Returns 0, or -1 (bad or duplicate id). */
int fake_discord_add_channel(fake_discord *fd, const char *id, const char *name, char *id_out);

/* A guild role (id a snowflake, not the guild's: that is @everyone, whose
 * permissions are fixed) with the given permission bits; GET
 * /guilds/{id}/roles lists it after @everyone. Returns 0 or -1. */
int fake_discord_add_role(fake_discord *fd, const char *role_id, const char *name,
                          uint64_t permissions);

/* Give user_id the role (its member object's "roles"). Returns 0 or -1. The
 * fake's own permission checks still look at channel overwrites only. */
int fake_discord_grant_role(fake_discord *fd, const char *user_id, const char *role_id);

/* Replace a channel's permission_overwrites with a copy of overwrites (an
 * array of {id, type 0 role / 1 member, allow, deny}). Returns 0 or -1. */
int fake_discord_set_overwrites(fake_discord *fd, const char *channel_id, const json_t *overwrites);

/*
 * Queue a fault for the next `count` Discord requests matching route:
 * "*" (any), a template ("POST /channels/{id}/messages") or a concrete
 * request ("POST /channels/123/messages"). retry_after_s for the 429 kinds
 * (<= 0: 0.05), delay_ms for the delay kinds. Faults are consumed in the
 * order they were added. Returns 0 or -1.
 */
int fake_discord_add_fault(fake_discord *fd, const char *route, fake_discord_fault_kind kind,
                           int count, double retry_after_s, long delay_ms);

/* Forget queued faults and switch the fail rate off. */
void fake_discord_clear_faults(fake_discord *fd);

/* Fail each Discord request with probability rate (0..1) with a mix of 429
 * (retry_after_s), 500 and 500-after-processing, from a PRNG seeded with
 * seed. rate 0 switches it off. */
void fake_discord_set_fail_rate(fake_discord *fd, double rate, unsigned seed, double retry_after_s);

/* Enforce a window of `limit` requests per `window_s` seconds per route
 * bucket (429 beyond, headers reflect it). Default: 10000 per 1 s. */
void fake_discord_set_rate_limit(fake_discord *fd, int limit, double window_s);

/* Recorded Discord requests as a NEW JSON array (caller decrefs), seq
 * greater than `since` (0: all). */
json_t *fake_discord_requests(fake_discord *fd, long since);

/* Number of recorded Discord requests (lean: of Discord requests since
 * the last clear). */
size_t fake_discord_request_count(fake_discord *fd);

/* Forget recorded requests (seq keeps counting). */
void fake_discord_clear_requests(fake_discord *fd);

/* Wait until at least n requests were recorded; 0, or -1 on timeout. */
int fake_discord_wait_requests(fake_discord *fd, size_t n, long timeout_ms);

/* Messages of a channel (NULL: all channels) oldest first, as a NEW JSON
 * array of Discord message objects (caller decrefs). */
json_t *fake_discord_messages(fake_discord *fd, const char *channel_id);

/* Number of messages in a channel (NULL: all). */
size_t fake_discord_message_count(fake_discord *fd, const char *channel_id);

/* Wait until a channel (NULL: all) holds at least n messages; 0 or -1. */
int fake_discord_wait_messages(fake_discord *fd, const char *channel_id, size_t n, long timeout_ms);

/* The channel object as a NEW reference, or NULL when unknown. */
json_t *fake_discord_channel(fake_discord *fd, const char *channel_id);

/* Every channel object as a NEW JSON array. */
json_t *fake_discord_channels(fake_discord *fd);

/* Put a message into a channel as author_id without any check (a human
 * speaking). id_out (>= 24 bytes) may be NULL. Returns 0, or -1 for an
 * unknown channel. */
int fake_discord_inject_message(fake_discord *fd, const char *channel_id, const char *author_id,
                                const char *content, char *id_out);

/* Like fake_discord_inject_message, plus mentions: a NULL-terminated list
 * of user ids (may be NULL) mentioned besides <@id> in content. */
int fake_discord_inject(fake_discord *fd, const char *channel_id, const char *author_id,
                        const char *content, const char *const *mentions, char *id_out);

/* Create a public thread (type 11) in a text channel, started from
 * message_id (then the thread's id is that id) or not (NULL). name NULL:
 * "thread". id_out (>= 24 bytes) may be NULL. Returns 0 or -1. */
int fake_discord_add_thread(fake_discord *fd, const char *channel_id, const char *message_id,
                            const char *name, char *id_out);

/* The open gateway websockets as a NEW JSON array (caller decrefs), the
 * same objects as GET /_fake/gateway. */
json_t *fake_discord_gateway_sessions(fake_discord *fd);

/* Wait until at least n open websockets are identified (READY sent);
 * 0, or -1 on timeout. */
int fake_discord_wait_gateway(fake_discord *fd, size_t n, long timeout_ms);

#endif
