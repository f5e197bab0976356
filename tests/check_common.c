/*
 * check_common.c -- the helpers of common/ every part shares: UTF-8
 * counting, checking, decoding and cutting; the growable string buffer and
 * dg_sprintf; the "only these keys" rule; the HTTP request body bound;
 * the string map's hash.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "edit_distance.h"
#include "http_server.h"
#include "json_keys.h"
#include "md_code.h"
#include "str_map.h"
#include "utf8.h"

START_TEST(test_edit_distance)
{
    ck_assert_uint_eq(dg_edit_distance("status", 6, "status", 6), 0);
    ck_assert_uint_eq(dg_edit_distance("STATUS", 6, "status", 6), 0);
    ck_assert_uint_eq(dg_edit_distance("stauts", 6, "status", 6), 1);  /* swap */
    ck_assert_uint_eq(dg_edit_distance("stats", 5, "status", 6), 1);   /* insert */
    ck_assert_uint_eq(dg_edit_distance("statuus", 7, "status", 6), 1); /* delete */
    ck_assert_uint_eq(dg_edit_distance("stutus", 6, "status", 6), 1);  /* substitute */
    ck_assert_uint_eq(dg_edit_distance("", 0, "rest", 4), 4);
    ck_assert_uint_eq(dg_edit_distance("rot", 3, "rest", 4), 2);
    ck_assert_uint_eq(dg_edit_distance("!dirignet", 9, "!dirigent", 9), 1);
    ck_assert_uint_eq(dg_edit_distance("kitten", 6, "sitting", 7), 3);
    char big[DG_EDIT_DISTANCE_MAX + 2];
    memset(big, 'a', sizeof big);
    ck_assert_uint_eq(dg_edit_distance(big, sizeof big, "a", 1), (size_t)-1);
    ck_assert_uint_eq(dg_edit_distance(big, DG_EDIT_DISTANCE_MAX, "a", 1),
                      DG_EDIT_DISTANCE_MAX - 1);
}
END_TEST

/* Discord's code: what dg_md_blank_code blanks (offsets kept). */
static void blanks(const char *in, const char *want, int any)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", in);
    ck_assert_int_eq(dg_md_blank_code(buf), any);
    ck_assert_msg(strcmp(buf, want) == 0, "\"%s\" -> \"%s\", want \"%s\"", in, buf, want);
}

START_TEST(test_md_code_blanked)
{
    ck_assert_int_eq(dg_md_blank_code(NULL), 0);
    blanks("hi <@1> there", "hi <@1> there", 0);
    blanks("see `<@1>` and <@2>", "see        and <@2>", 1);
    blanks("a ``x ` y`` b", "a           b", 1);
    blanks("```\n@bravo\n``` @alpha", "               @alpha", 1);
    blanks("```js\n`@b`\n``` x", "               x", 1);
    blanks("open ` only <@1>", "open ` only <@1>", 0);
    blanks("``x` <@1>", "``x` <@1>", 0);
    blanks("\\`not code` `c`", "\\`not code   c`", 1);
    blanks("```unclosed <@1>", "```unclosed <@1>", 0);
    blanks("`a` `b`", "       ", 1);
    blanks("", "", 0);
}
END_TEST

START_TEST(test_utf8_count_and_prefix)
{
    ck_assert_uint_eq(dg_utf8_count(""), 0);
    ck_assert_uint_eq(dg_utf8_count("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), 4); /* a é € 😀 */
    ck_assert_uint_eq(dg_utf8_prefix("a\xc3\xa9z", 2), 3); /* never inside é */
    ck_assert_uint_eq(dg_utf8_prefix("ab", 5), 2);
    ck_assert_uint_eq(dg_utf8_char_start("a\xe2\x82\xac", 3), 1); /* inside €: back to its start */
    ck_assert_uint_eq(dg_utf8_char_start("abc", 2), 2);
}
END_TEST

START_TEST(test_utf8_well_formed_sequences)
{
    ck_assert_uint_eq(dg_utf8_seq_len("a"), 1);
    ck_assert_uint_eq(dg_utf8_seq_len("\xc3\xa9"), 2);
    ck_assert_uint_eq(dg_utf8_seq_len("\xf0\x9f\x98\x80"), 4);
    ck_assert_uint_eq(dg_utf8_seq_len("\x80"), 0);             /* stray continuation */
    ck_assert_uint_eq(dg_utf8_seq_len("\xc0\x80"), 0);         /* overlong NUL */
    ck_assert_uint_eq(dg_utf8_seq_len("\xe0\x80\x80"), 0);     /* overlong */
    ck_assert_uint_eq(dg_utf8_seq_len("\xed\xa0\x80"), 0);     /* surrogate */
    ck_assert_uint_eq(dg_utf8_seq_len("\xf4\x90\x80\x80"), 0); /* past U+10FFFF */
    ck_assert_uint_eq(dg_utf8_seq_len("\xe2\x82"), 0);         /* cut short */
    ck_assert_int_eq(dg_utf8_count_valid("h\xc3\xa9"), 2);
    ck_assert_int_eq(dg_utf8_count_valid("h\xff"), -1);
}
END_TEST

START_TEST(test_utf8_decode_is_lenient)
{
    size_t len;
    ck_assert_uint_eq(dg_utf8_decode("\xe2\x82\xac", 3, &len), 0x20AC);
    ck_assert_uint_eq(len, 3);
    ck_assert_uint_eq(dg_utf8_decode("\xe2\x82\xac", 2, &len), 0xE2); /* not enough bytes */
    ck_assert_uint_eq(len, 1);
    ck_assert_uint_eq(dg_utf8_decode("\xc3(", 2, &len), 0xC3);
    ck_assert_uint_eq(len, 1);
}
END_TEST

START_TEST(test_utf8_valid_copy)
{
    char *c = dg_utf8_valid_copy("ok \xff \xc3\xa9 \xed\xa0\x80!");
    ck_assert_str_eq(c, "ok ? \xc3\xa9 ?\?\?!");
    free(c);
    c = dg_utf8_valid_copy("cut \xe2\x82"); /* a sequence cut at the end goes */
    ck_assert_str_eq(c, "cut ");
    free(c);
}
END_TEST

START_TEST(test_buf_grows_and_sprintf)
{
    dg_buf b = {0};
    for (int i = 0; i < 1000; i++)
        ck_assert_int_eq(dg_buf_adds(&b, "xy"), 0);
    ck_assert_uint_eq(b.len, 2000);
    ck_assert_uint_eq(strlen(b.s), 2000);
    ck_assert_int_eq(dg_buf_add(&b, "a\0b", 3), 0);
    ck_assert_uint_eq(b.len, 2003);
    ck_assert_int_eq(b.s[2001], '\0');
    ck_assert_int_eq(b.s[2003], '\0');
    dg_buf_free(&b);
    ck_assert_ptr_null(b.s);
    ck_assert_uint_eq(b.len, 0);
    char *s = dg_sprintf("%s-%d", "n", 42);
    ck_assert_str_eq(s, "n-42");
    free(s);
}
END_TEST

/* An array grows by doubling from `first`, keeps what it holds, and a
 * refusal (a count above the capacity, a size that overflows) changes
 * nothing. */
START_TEST(test_grow_doubles_and_refuses_cleanly)
{
    long *v = NULL;
    size_t n = 0, cap = 0;
    for (long i = 0; i < 100; i++) {
        ck_assert_int_eq(dg_grow(&v, &cap, n, sizeof *v, 4), 0);
        ck_assert_uint_gt(cap, n);
        v[n++] = i * 7;
    }
    ck_assert_uint_eq(cap, 128); /* 4, 8, ..., 128 */
    for (long i = 0; i < 100; i++)
        ck_assert_int_eq(v[i], i * 7);
    long *before = v;
    ck_assert_int_eq(dg_grow(&v, &cap, n, sizeof *v, 4), 0); /* room left: no realloc */
    ck_assert_ptr_eq(v, before);
    ck_assert_int_eq(dg_grow(&v, &cap, cap + 1, sizeof *v, 4), -1);
    ck_assert_uint_eq(cap, 128);
    ck_assert_ptr_eq(v, before);
    ck_assert_int_eq(dg_grow(&v, &cap, cap, SIZE_MAX / 64, 4), -1); /* 256 x that overflows */
    ck_assert_uint_eq(cap, 128);
    ck_assert_ptr_eq(v, before);
    free(v);
}
END_TEST

/* dg_str_join cuts where snprintf would and skips NULL parts. */
START_TEST(test_str_join_cuts_as_snprintf)
{
    const char *parts[] = {"message ", "123", NULL, " from ", "human"};
    char out[64], ref[64];
    ck_assert_uint_eq(dg_str_join(out, sizeof out, parts, 5), 22);
    ck_assert_str_eq(out, "message 123 from human");
    for (size_t cap = 1; cap <= 24; cap++) {
        size_t n = dg_str_join(out, cap, parts, 5);
        snprintf(ref, cap, "%s%s%s%s", "message ", "123", " from ", "human");
        ck_assert_str_eq(out, ref);
        ck_assert_uint_eq(n, strlen(ref));
    }
    ck_assert_uint_eq(dg_str_join(out, sizeof out, parts, 0), 0);
    ck_assert_str_eq(out, "");
}
END_TEST

/* The map's hash reads whole words and ends on an overlapping last word:
 * every byte of keys of every length up to 40 changes it, as does the
 * length alone (a key and its prefix), and a map of ids that differ only
 * in their last digits finds each of them. */
START_TEST(test_map_hash_sees_every_byte)
{
    char key[41], other[41];
    for (size_t len = 0; len <= 40; len++) {
        for (size_t i = 0; i < len; i++)
            key[i] = (char)('0' + i % 10);
        key[len] = '\0';
        uint64_t h = dg_map_hash(key);
        for (size_t i = 0; i < len; i++) {
            memcpy(other, key, len + 1);
            other[i] = (char)(other[i] == 'x' ? 'y' : 'x');
            ck_assert_msg(dg_map_hash(other) != h, "byte %zu of a %zu-byte key", i, len);
        }
        if (len)
            ck_assert_msg(dg_map_hash(key + 1) != h, "a %zu-byte key and its tail", len);
        memcpy(other, key, len + 1);
        other[len ? len - 1 : 0] = '\0';
        if (len)
            ck_assert_msg(dg_map_hash(other) != h, "a %zu-byte key and its prefix", len);
    }
    dg_map m;
    dg_map_init(&m);
    static char ids[2000][24];
    for (int i = 0; i < 2000; i++) {
        snprintf(ids[i], sizeof ids[i], "1450000000000%06d", i);
        ck_assert_int_eq(dg_map_put(&m, ids[i], ids[i]), 0);
    }
    ck_assert_uint_eq(m.n, 2000);
    for (int i = 0; i < 2000; i++)
        ck_assert_ptr_eq(dg_map_get(&m, ids[i]), ids[i]);
    ck_assert_ptr_null(dg_map_get(&m, "1450000000000002000"));
    dg_map_clear(&m);
}
END_TEST

START_TEST(test_unknown_key)
{
    static const char *const allowed[] = {"a", "b", NULL};
    json_t *o = json_pack("{s:i, s:i}", "a", 1, "b", 2);
    ck_assert_ptr_null(dg_json_unknown_key(o, allowed));
    json_object_set_new(o, "c", json_true());
    ck_assert_str_eq(dg_json_unknown_key(o, allowed), "c");
    json_decref(o);
    json_t *arr = json_array();
    ck_assert_ptr_null(dg_json_unknown_key(arr, allowed)); /* no object, no keys */
    json_decref(arr);
}
END_TEST

START_TEST(test_http_body_bound)
{
    dg_http_body b = {0};
    size_t n = 6;
    ck_assert_int_eq(dg_http_body_take(&b, "hello ", &n, 10), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_str_eq(b.buf.s, "hello ");
    n = 4;
    ck_assert_int_eq(dg_http_body_take(&b, "1234", &n, 10), 0); /* exactly max */
    ck_assert(!b.too_large);
    n = 1;
    ck_assert_int_eq(dg_http_body_take(&b, "x", &n, 10), 0);
    ck_assert(b.too_large);
    ck_assert_uint_eq(b.buf.len, 10);
    n = 0;
    ck_assert_int_eq(dg_http_body_take(&b, "", &n, 10), 0); /* later chunks are dropped */
    ck_assert_uint_eq(b.buf.len, 10);
    dg_http_body_free(&b);
    ck_assert_ptr_null(b.buf.s);
}
END_TEST

Suite *make_common_suite(void)
{
    Suite *s = suite_create("common");
    TCase *tc = tcase_create("helpers");
    tcase_add_test(tc, test_utf8_count_and_prefix);
    tcase_add_test(tc, test_edit_distance);
    tcase_add_test(tc, test_md_code_blanked);
    tcase_add_test(tc, test_utf8_well_formed_sequences);
    tcase_add_test(tc, test_utf8_decode_is_lenient);
    tcase_add_test(tc, test_utf8_valid_copy);
    tcase_add_test(tc, test_buf_grows_and_sprintf);
    tcase_add_test(tc, test_grow_doubles_and_refuses_cleanly);
    tcase_add_test(tc, test_str_join_cuts_as_snprintf);
    tcase_add_test(tc, test_map_hash_sees_every_byte);
    tcase_add_test(tc, test_unknown_key);
    tcase_add_test(tc, test_http_body_bound);
    suite_add_tcase(s, tc);
    return s;
}
