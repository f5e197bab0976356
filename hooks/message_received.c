/*
 * message_received.c -- decode the event, hand it to the turn engine.
 * Event: messageId, channelId, threadId?, guildId?, isDm, senderId,
 * senderIsBot, content, mentions[] (user ids), tags? (NIP-10 arrays).
 * Context: channelId, accountId?, sessionKey? (fired once per account that
 * saw it). With sessionKey agent:<id>:discord:channel:<c>[:thread:<t>]
 * (OpenClaw fires it once per agent session) the engine also learns that a
 * moderator message reached that agent, which ends the agent's wait for its
 * wake message (turns_engine.h "Awaiting the wake message"); this is done
 * per report, before the dedup by message id. Without sessionKey nothing
 * is known per agent, and no wait is ever armed.
 */
#include "hooks_int.h"

#include <stdio.h>
#include <string.h>

#define MAX_MENTIONS 100
#define MAX_TAGS 64
#define MAX_TAG_PARTS 8

/* Refuse the event: log which field is wrong and what the host must send. */
static int refuse(dg_plugin *p, const char *field, const char *rule)
{
    dg_log(p, OC_LOG_WARN,
           "message_received: event.%s %s; the message is ignored (nothing "
           "changes)",
           field, rule);
    return OC_ERR_INVALID;
}

/* Optional boolean member v: 0 / 1, or -1 when it has another type. */
static int opt_bool(const json_t *v)
{
    if (!v || json_is_null(v))
        return 0;
    return json_is_boolean(v) ? json_is_true(v) : -1;
}

/* The event's members this hook reads, found in one walk over it: every
 * message is decoded on the ingest's hot path, and a lookup per member
 * (nine of them) cost more than the walk. Unknown members are skipped. */
typedef struct event_members {
    const json_t *message_id, *channel_id, *thread_id, *sender_id, *content, *is_dm, *sender_is_bot,
        *mentions, *tags;
} event_members;

static void event_members_of(const json_t *event, event_members *e)
{
    memset(e, 0, sizeof *e);
    /* The iterator itself, not json_object_foreach: that one finds each
     * member's iterator again from its key, twice per member. */
    for (void *it = json_object_iter((json_t *)event); it;
         it = json_object_iter_next((json_t *)event, it)) {
        const char *key = json_object_iter_key(it);
        const json_t **slot = NULL;
        switch (key[0]) {
        case 'c':
            slot = !strcmp(key, "channelId") ? &e->channel_id
                   : !strcmp(key, "content") ? &e->content
                                             : NULL;
            break;
        case 'i': slot = !strcmp(key, "isDm") ? &e->is_dm : NULL; break;
        case 'm':
            slot = !strcmp(key, "messageId")  ? &e->message_id
                   : !strcmp(key, "mentions") ? &e->mentions
                                              : NULL;
            break;
        case 's':
            slot = !strcmp(key, "senderId")      ? &e->sender_id
                   : !strcmp(key, "senderIsBot") ? &e->sender_is_bot
                                                 : NULL;
            break;
        case 't':
            slot = !strcmp(key, "threadId") ? &e->thread_id
                   : !strcmp(key, "tags")   ? &e->tags
                                            : NULL;
            break;
        default: break;
        }
        if (slot)
            *slot = json_object_iter_value(it);
    }
}

/* The context's members this hook reads, in one walk for the same reason
 * (three lookups by name cost more than the walk of a host's context). */
typedef struct ctx_members {
    const json_t *channel_id, *message_provider, *session_key;
} ctx_members;

static void ctx_members_of(const json_t *ctx, ctx_members *c)
{
    memset(c, 0, sizeof *c);
    if (!json_is_object(ctx))
        return;
    for (void *it = json_object_iter((json_t *)ctx); it;
         it = json_object_iter_next((json_t *)ctx, it)) {
        const char *key = json_object_iter_key(it);
        const json_t **slot = !strcmp(key, "channelId")         ? &c->channel_id
                              : !strcmp(key, "messageProvider") ? &c->message_provider
                              : !strcmp(key, "sessionKey")      ? &c->session_key
                                                                : NULL;
        if (slot)
            *slot = json_object_iter_value(it);
    }
}

/* String value of member v, NULL when absent or not a string. */
static const char *str_or_null(const json_t *v)
{
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* The ids, content and flags of the event into m (borrowed from event and
 * ctx), each checked for its type. OC_OK, or OC_ERR_INVALID logged with
 * the field and its rule. */
static int decode_fields(dg_plugin *p, const event_members *e, const ctx_members *ctx,
                         dg_turn_message *m)
{
    static const char ID_RULE[] = "is not a string; ids are JSON strings";
    if (dg_json_str_member(e->message_id, &m->message_id))
        return refuse(p, "messageId", ID_RULE);
    if (m->message_id && !*m->message_id)
        return refuse(p, "messageId", "is empty; leave it out when the message has no id");
    if (dg_json_str_member(e->channel_id, &m->channel_id))
        return refuse(p, "channelId", ID_RULE);
    if (!m->channel_id && dg_json_str_member(ctx->channel_id, &m->channel_id)) {
        dg_log(p, OC_LOG_WARN,
               "message_received: event.channelId is missing and ctx.channelId "
               "is not a string; the message is ignored (nothing changes)");
        return OC_ERR_INVALID;
    }
    if (dg_json_str_member(e->thread_id, &m->thread_id))
        return refuse(p, "threadId", ID_RULE);
    char root[DG_SCOPE_ID_MAX];
    if (m->thread_id && *m->thread_id &&
        dg_scope_normalize_root(m->thread_id, root, sizeof root) != OC_OK) {
        char rule[128];
        snprintf(rule, sizeof rule,
                 "is not a thread id (at most %d characters, no ':' and no "
                 "control characters)",
                 DG_SCOPE_ID_MAX - 1);
        return refuse(p, "threadId", rule);
    }
    if (dg_json_str_member(e->sender_id, &m->sender_id))
        return refuse(p, "senderId", ID_RULE);
    if (dg_json_str_member(e->content, &m->content))
        return refuse(p, "content", "is not a string");
    if ((m->is_dm = opt_bool(e->is_dm)) < 0)
        return refuse(p, "isDm", "is not a boolean");
    if ((m->sender_is_bot = opt_bool(e->sender_is_bot)) < 0)
        return refuse(p, "senderIsBot", "is not a boolean");
    return OC_OK;
}

/* The mentioned user ids (the first MAX_MENTIONS) into mentions, borrowed
 * from jm; m->n_mentions counts them. OC_OK or OC_ERR_INVALID (logged). */
static int decode_mentions(dg_plugin *p, const json_t *jm, const char **mentions,
                           dg_turn_message *m)
{
    size_t i;
    json_t *v;
    if (jm && !json_is_null(jm) && !json_is_array(jm))
        return refuse(p, "mentions", "is not an array of user ids");
    json_array_foreach(jm, i, v) {
        if (!json_is_string(v))
            return refuse(p, "mentions", "holds something other than user id strings");
        if (m->n_mentions < MAX_MENTIONS)
            mentions[m->n_mentions++] = json_string_value(v);
    }
    m->mentions = mentions;
    return OC_OK;
}

/* Tags: arrays of strings; anything else in them makes the tag not count
 * (the scope rules ignore malformed tags). tags and parts: the caller's
 * room for MAX_TAGS tags, borrowing from jt. */
static void decode_tags(const json_t *jt, dg_tag *tags, const char *(*parts)[MAX_TAG_PARTS],
                        dg_turn_message *m)
{
    size_t i;
    json_t *v;
    if (json_is_array(jt)) {
        json_array_foreach(jt, i, v) {
            if (m->n_tags >= MAX_TAGS || !json_is_array(v))
                continue;
            size_t k = 0, j;
            json_t *part;
            int ok = 1;
            json_array_foreach(v, j, part) {
                if (!json_is_string(part)) {
                    ok = 0;
                    break;
                }
                if (k < MAX_TAG_PARTS)
                    parts[m->n_tags][k++] = json_string_value(part);
            }
            if (!ok)
                continue;
            tags[m->n_tags].parts = parts[m->n_tags];
            tags[m->n_tags].n = k;
            m->n_tags++;
        }
    }
    m->tags = tags;
}

/* The recipient of a per-agent delivery (ctx's session) into *rcpt, and
 * m->recipient when that session belongs to m's channel or thread.
 * OC_OK, or OC_ERR_INVALID (logged) for a ctx that cannot be read. */
static int decode_recipient(dg_plugin *p, const ctx_members *ctx, dg_hook_session *rcpt,
                            dg_turn_message *m)
{
    int per_agent = dg_hook_decode_recipient(&p->cfg, ctx->session_key, rcpt);
    if (per_agent < 0) {
        dg_log(p, OC_LOG_WARN, "message_received: %s; the message is ignored (nothing changes)",
               rcpt->err);
        return OC_ERR_INVALID;
    }
    /* Without a channel id the ingest refuses the message; there is nothing
     * to compare the recipient's session with (a per-agent ctx whose
     * channelId is misspelt, say). */
    if (per_agent && m->channel_id) {
        int same = strcmp(rcpt->s.channel_id, m->channel_id) == 0 ||
                   (m->thread_id && strcmp(rcpt->s.channel_id, m->thread_id) == 0);
        if (same)
            m->recipient = &rcpt->s;
        else
            dg_log(p, OC_LOG_DEBUG,
                   "message_received: ctx.sessionKey %s is not a session of "
                   "channel %s; not counted as a delivery to %s",
                   rcpt->s.session_key, m->channel_id, rcpt->s.agent_id);
    }
    return OC_OK;
}

int dg_hook_message_received(void *state, const json_t *event, const json_t *ctx, json_t **result)
{
    dg_plugin *p = state;
    (void)result;
    if (!json_is_object(event)) {
        dg_log(p, OC_LOG_WARN, "message_received: the event is not a JSON object; ignored");
        return OC_ERR_INVALID;
    }
    ctx_members c;
    ctx_members_of(ctx, &c);
    if (dg_hook_foreign_of(&p->cfg, str_or_null(c.message_provider), str_or_null(c.session_key)))
        return OC_OK; /* another chat platform's message: not a channel of ours */
    /* Every field is checked before anything is recorded: a wrong-typed id
     * read as "absent" would turn a message into another one (no dedup, a
     * top-level thread instead of its thread, a DM, a human). */
    dg_turn_message m;
    memset(&m, 0, sizeof m);
    event_members e;
    event_members_of(event, &e);
    const char *mentions[MAX_MENTIONS];
    dg_tag tags[MAX_TAGS];
    const char *parts[MAX_TAGS][MAX_TAG_PARTS];
    dg_hook_session rcpt;
    int rc = decode_fields(p, &e, &c, &m);
    if (rc == OC_OK && dg_hook_unmanaged_channel(&p->cfg, m.channel_id))
        return OC_OK; /* a platform without its section in the config: not ours */
    if (rc == OC_OK)
        rc = decode_mentions(p, e.mentions, mentions, &m);
    if (rc != OC_OK)
        return rc;
    decode_tags(e.tags, tags, parts, &m);
    if ((rc = decode_recipient(p, &c, &rcpt, &m)) != OC_OK)
        return rc;

    char err[512];
    rc = dg_turns_ingest(p->turns, &m, err, sizeof err);
    if (rc != OC_OK)
        dg_log(p, rc == OC_ERR_INVALID ? OC_LOG_WARN : OC_LOG_ERROR, "%s", err);
    return rc;
}
