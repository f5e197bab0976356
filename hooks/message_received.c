/*
 * message_received.c -- decode the event, hand it to the turn engine.
 * Event: messageId, channelId, threadId?, guildId?, isDm, senderId,
 * senderIsBot, content, mentions[] (user ids), tags? (NIP-10 arrays).
 * Context: channelId, accountId? (fired once per account that saw it).
 */
#include "hooks_internal.h"

#include <stdio.h>
#include <string.h>

#define MAX_MENTIONS 100
#define MAX_TAGS 64
#define MAX_TAG_PARTS 8

int dg_hook_message_received(void *state, const json_t *event, const json_t *ctx,
                             json_t **result)
{
    dg_plugin *p = state;
    (void)result;
    if (!json_is_object(event)) {
        dg_log(p, OC_LOG_WARN, "message_received: the event is not a JSON object; ignored");
        return OC_ERR_INVALID;
    }
    dg_turn_message m;
    memset(&m, 0, sizeof m);
    m.message_id = dg_json_str(event, "messageId");
    m.channel_id = dg_json_str(event, "channelId");
    if (!m.channel_id)
        m.channel_id = dg_json_str(ctx, "channelId");
    m.thread_id = dg_json_str(event, "threadId");
    m.is_dm = json_is_true(json_object_get(event, "isDm"));
    m.sender_id = dg_json_str(event, "senderId");
    m.sender_is_bot = json_is_true(json_object_get(event, "senderIsBot"));
    m.content = dg_json_str(event, "content");

    const char *mentions[MAX_MENTIONS];
    const json_t *jm = json_object_get(event, "mentions");
    size_t i;
    json_t *v;
    if (json_is_array(jm)) {
        json_array_foreach(jm, i, v) {
            if (m.n_mentions < MAX_MENTIONS && json_is_string(v))
                mentions[m.n_mentions++] = json_string_value(v);
        }
    }
    m.mentions = mentions;

    /* Tags: arrays of strings; anything else in them makes the tag not
     * count (the scope rules ignore malformed tags). */
    dg_tag tags[MAX_TAGS];
    const char *parts[MAX_TAGS][MAX_TAG_PARTS];
    const json_t *jt = json_object_get(event, "tags");
    if (json_is_array(jt)) {
        json_array_foreach(jt, i, v) {
            if (m.n_tags >= MAX_TAGS || !json_is_array(v))
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
                    parts[m.n_tags][k++] = json_string_value(part);
            }
            if (!ok)
                continue;
            tags[m.n_tags].parts = parts[m.n_tags];
            tags[m.n_tags].n = k;
            m.n_tags++;
        }
    }
    m.tags = tags;

    char err[512];
    int rc = dg_turns_ingest(p->turns, &m, err, sizeof err);
    if (rc != OC_OK)
        dg_log(p, rc == OC_ERR_INVALID ? OC_LOG_WARN : OC_LOG_ERROR, "%s", err);
    return rc;
}
