/*
 * check_ocgw.c -- unit tests of the reference gateway's pieces (host/ocgw_*.c
 * minus its main, linked from libocgw.a): the transcript's one-line texts.
 * The gateway as a whole runs in check_e2e.c.
 */
#include <check.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocgw.h"
#include "testutil.h"

/* ---- one-line texts ------------------------------------------------------------------ */

static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* ocgw_oneline(text, max) is a C string inside its own allocation, valid
 * UTF-8, at most max characters of the text (line breaks as spaces) and
 * "..." when cut; want (if not NULL) is the exact result. */
static void expect_oneline(const char *text, size_t max, const char *want)
{
    char *out = ocgw_oneline(text, max);
    ck_assert_ptr_nonnull(out);
    size_t len = strlen(out);
    /* malloc_usable_size: the bytes written must fit the block handed out
     * (a heap overflow here was the bug; ASan says the same louder). */
    ck_assert_msg(len + 1 <= malloc_usable_size(out),
                  "oneline wrote %zu bytes into a block of %zu", len + 1,
                  malloc_usable_size(out));
    json_t *j = json_string(out);
    ck_assert_msg(j != NULL, "oneline cut a UTF-8 character: %s", out);
    json_decref(j);
    if (want) {
        ck_assert_str_eq(out, want);
    } else {
        ck_assert_msg(len > 3 && !strcmp(out + len - 3, "..."), "not marked as cut: %s", out);
        ck_assert_msg(!strncmp(out, text, len - 3), "not a prefix of the text: %s", out);
        ck_assert_uint_le(utf8_chars(out) - 3, max);
        ck_assert_uint_ge(utf8_chars(out) - 3, max - 1);
    }
    free(out);
}

START_TEST(oneline_of_multibyte_text_fits_its_buffer)
{
    /* Seed 003 is Chinese: 3-byte characters; emoji take 4. */
    char zh[1024] = "", emoji[1024] = "";
    for (int i = 0; i < 100; i++)
        strcat(zh, "讨论");
    for (int i = 0; i < 120; i++)
        strcat(emoji, "\xF0\x9F\x98\x80");
    expect_oneline(zh, 60, NULL);
    expect_oneline(zh, 199, NULL);
    expect_oneline(emoji, 50, NULL);
    /* Short texts whole, line breaks as spaces; ASCII cut at max. */
    expect_oneline("讨论\n结束", 60, "讨论 结束");
    expect_oneline("plain\ttext", 5, "plain...");
    expect_oneline("", 10, "");
}
END_TEST

Suite *make_ocgw_suite(void)
{
    Suite *s = suite_create("ocgw");
    TCase *tc = tcase_create("pieces");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, oneline_of_multibyte_text_fits_its_buffer);
    suite_add_tcase(s, tc);
    return s;
}
