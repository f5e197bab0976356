/*
 * fuzz_scope.c -- libFuzzer target: the scope and tag parser (plugin/scope.c).
 *
 * Input: JSON {"policy": "thread"|..., "channel", "thread", "message",
 * "dm", "tags": [[part...]...], "key"} (any member may be missing or of
 * another type); text that is no JSON object is taken as a scope key.
 * Checked: a derived scope is well formed and its key parses back to the
 * same scope; dg_scope_from_key accepts only keys that round-trip; a NIP-10
 * root is 64 lower-case hex digits.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "openclaw/plugin.h"
#include "scope.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_TAGS 16
#define MAX_PARTS 8

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_scope: %s: %s\n", what, detail);
    abort();
}

static void check_scope(const dg_scope *s)
{
    if (memchr(s->channel_id, '\0', sizeof s->channel_id) == NULL ||
        memchr(s->root, '\0', sizeof s->root) == NULL)
        fail("unterminated field", "channel_id or root");
    if (!s->channel_id[0])
        fail("empty channel", "a scope always has its channel");
    if ((s->kind == DG_SCOPE_CONVERSATION) != (s->root[0] == '\0'))
        fail("kind and root disagree", s->root);
    for (const char *p = s->root; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            fail("root not lower-case", s->root);
    char key[DG_SCOPE_KEY_MAX], label[DG_SCOPE_LABEL_MAX];
    dg_scope_key(s, key);
    dg_scope_label(s, label);
    dg_scope back;
    /* A root or channel with ':' cannot round-trip through the key; such a
     * scope must then be refused by from_key, not mis-parsed into another. */
    if (dg_scope_from_key(key, &back) == OC_OK && !dg_scope_equal(s, &back) &&
        !strchr(s->root, ':'))
        fail("key does not round-trip", key);
}

static void check_key(const char *key)
{
    dg_scope s;
    if (dg_scope_from_key(key, &s) != OC_OK)
        return;
    check_scope(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *in = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
    if (!json_is_object(in)) {
        json_decref(in);
        char *key = strndup((const char *)data, size);
        if (key) {
            check_key(key);
            char norm[DG_SCOPE_ID_MAX];
            dg_scope_normalize_root(key, norm, sizeof norm);
        }
        free(key);
        return 0;
    }
    const char *parts[MAX_TAGS][MAX_PARTS];
    dg_tag tags[MAX_TAGS];
    size_t n_tags = 0;
    const json_t *jt = json_object_get(in, "tags");
    for (size_t i = 0; i < json_array_size(jt) && n_tags < MAX_TAGS; i++) {
        const json_t *t = json_array_get(jt, i);
        size_t n = 0;
        for (size_t k = 0; k < json_array_size(t) && n < MAX_PARTS; k++)
            parts[n_tags][n++] = json_string_value(json_array_get(t, k)); /* NULL if no string */
        tags[n_tags] = (dg_tag){.parts = parts[n_tags], .n = n};
        n_tags++;
    }
    dg_scope_event ev = {
        .channel_id = json_string_value(json_object_get(in, "channel")),
        .thread_id = json_string_value(json_object_get(in, "thread")),
        .message_id = json_string_value(json_object_get(in, "message")),
        .is_dm = json_is_true(json_object_get(in, "dm")),
        .tags = n_tags ? tags : NULL,
        .n_tags = n_tags,
    };
    const char *pol = json_string_value(json_object_get(in, "policy"));
    dg_session_policy policy = pol && !strcmp(pol, "thread") ? DG_POLICY_THREAD : DG_POLICY_CHANNEL;
    dg_scope s;
    if (dg_scope_derive(policy, &ev, &s) == OC_OK)
        check_scope(&s);
    char root[65];
    if (dg_nip10_root(ev.tags, n_tags, root)) {
        if (strlen(root) != 64 || strspn(root, "0123456789abcdef") != 64)
            fail("NIP-10 root is not 64 lower-case hex digits", root);
    }
    const char *key = json_string_value(json_object_get(in, "key"));
    if (key)
        check_key(key);
    json_decref(in);
    return 0;
}
