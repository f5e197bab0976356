/*
 * secret_shape.h -- "does this look like a Discord bot token?", one rule for
 * the plugin's config (plugin/config.c) and the reference gateway's config
 * (host/ocgw_config.c), so neither ever echoes a token in an error text.
 *
 * A bot token is three base64url parts joined by dots: the bot's user id in
 * base64 (16+ characters), a timestamp (4-12) and an HMAC (20+), e.g.
 * MTIzNDU2Nzg5MDEyMzQ1Njc4.GhIjKl.abcdefghijklmnopqrstuvwxyz0123456789AB.
 * A JWT has the same shape and is a secret too. Slack's tokens are told by
 * their prefix: xoxb-, xoxp-, ... (any "xox" + letter + '-') and xapp-.
 */
#ifndef DG_SECRET_SHAPE_H
#define DG_SECRET_SHAPE_H

#include <stddef.h>
#include <jansson.h>

/* True when s (may be NULL) contains a token-shaped run anywhere. Any thread. */
int dg_looks_like_token(const char *s);

/*
 * Walk every object key and string value of root (borrowed). The first one
 * that looks like a token fills `where` with its JSON path (object members
 * "a.b", array elements "a[0]"; for a key, the path of the object holding
 * it, "" for the root) and *is_key, and returns 1; 0 when none does.
 * `skip` (NULL-terminated, may be NULL) lists paths whose value and subtree
 * are not searched (where a token legitimately lives); "*" in a pattern
 * matches one whole key. Any thread.
 */
int dg_json_find_token(const json_t *root, const char *const *skip, char *where, size_t where_len,
                       int *is_key);

#endif
