/*
 * check_silent.c -- NO_REPLY detection per the OpenClaw rules, and run
 * outcomes.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "silent.h"

START_TEST(test_plain_and_case_insensitive)
{
    ck_assert(dg_silent_text("NO_REPLY"));
    ck_assert(dg_silent_text("no_reply"));
    ck_assert(dg_silent_text("No_Reply"));
}
END_TEST

START_TEST(test_decorated_and_multi_line_tokens_are_silent)
{
    static const char *const silent[] = {
        "  NO_REPLY  ",
        "\nNO_REPLY\n",
        "NO_REPLY.",
        "NO_REPLY!",
        "(NO_REPLY)",
        "**NO_REPLY**",
        "_NO_REPLY_",
        "`NO_REPLY`",
        "```\nNO_REPLY\n```",
        "> NO_REPLY",
        "\"NO_REPLY\"",
        "NO_REPLY_",
        "NO_REPLY NO_REPLY",
        "NO_REPLY\nNO_REPLY\n\nno_reply.",
        "NO_REPLY, NO_REPLY",
        "\tNO_REPLY\r\n",
        "NO_REPLY\xe3\x80\x82" /* CJK full stop */,
        "\xe2\x80\x9cNO_REPLY\xe2\x80\x9d" /* curly quotes */,
        "-- NO_REPLY --",
        "NO_REPLY...",
    };
    for (size_t i = 0; i < sizeof silent / sizeof silent[0]; i++)
        ck_assert_msg(dg_silent_text(silent[i]), "'%s' should be silent", silent[i]);
}
END_TEST

START_TEST(test_json_forms_are_silent)
{
    ck_assert(dg_silent_text("\"NO_REPLY\""));
    ck_assert(dg_silent_text("  \"no_reply\"  "));
    ck_assert(dg_silent_text("{\"action\":\"NO_REPLY\"}"));
    ck_assert(dg_silent_text("{ \"action\" : \"no_reply\" }\n"));
    ck_assert(dg_silent_text("\"\\u004eO_REPLY\"")); /* escaped N */
    ck_assert(!dg_silent_text("{\"action\":\"reply\",\"text\":\"NO_REPLY\"}"));
    ck_assert(!dg_silent_text("{\"text\":\"NO_REPLY\"}"));
    ck_assert(!dg_silent_text("\"I will say NO_REPLY\""));
}
END_TEST

/* The JSON forms, decorated: a model that wraps its envelope in a
 * code fence (with or without a language tag) or inline code, or escapes
 * the underscore for markdown, still says nothing. */
START_TEST(test_fenced_and_escaped_forms_are_silent)
{
    static const char *const silent[] = {
        "```json\n{\"action\":\"NO_REPLY\"}\n```",
        "```\n{\"action\":\"NO_REPLY\"}\n```",
        "`{\"action\":\"NO_REPLY\"}`",
        "  ```JSON\n{ \"action\": \"no_reply\" }\n```\n",
        "```json\n\"NO_REPLY\"\n```",
        "```text\nNO_REPLY\n```",
        "NO\\_REPLY",
        "**NO\\_REPLY**",
        "NO\\_REPLY\\_",
    };
    for (size_t i = 0; i < sizeof silent / sizeof silent[0]; i++)
        ck_assert_msg(dg_silent_text(silent[i]), "'%s' should be silent", silent[i]);
    static const char *const speech[] = {
        "```json\n{\"action\":\"reply\",\"text\":\"NO_REPLY\"}\n```",
        "```python\nNO_REPLY = 1\n```",
        "```json\n{\"action\":\"NO_REPLY\"}\n```\nand one more thing",
        "```\n```",
        "NO\\\\_REPLY",
        "```json\n{\"action\":\"NO_REPLY\"}",
    };
    for (size_t i = 0; i < sizeof speech / sizeof speech[0]; i++)
        ck_assert_msg(!dg_silent_text(speech[i]), "'%s' should be speech", speech[i]);
}
END_TEST

START_TEST(test_speech_is_not_silent)
{
    static const char *const speech[] = {
        "Hello",
        "NO_REPLY but actually I think we should ship",
        "I have nothing to add. NO_REPLY",
        "NO REPLY",
        "no-reply",
        "NOREPLY",
        "NO_REPLYX",
        "NO_REPLY_NO_REPLY",
        "...",
        "",
        "   ",
        "NO_REPLY \xf0\x9f\x91\x8d" /* thumbs up */,
        "NO_REPLY 42",
        "NO_REPLY\xc3\xa9",
    };
    for (size_t i = 0; i < sizeof speech / sizeof speech[0]; i++)
        ck_assert_msg(!dg_silent_text(speech[i]), "'%s' should be speech", speech[i]);
    ck_assert(!dg_silent_text(NULL));
}
END_TEST

START_TEST(test_tool_calls_without_text_are_not_silent)
{
    ck_assert_int_eq(dg_run_classify("", 2), DG_RUN_ACTED);
    ck_assert_int_eq(dg_run_classify(NULL, 1), DG_RUN_ACTED);
    ck_assert_int_eq(dg_run_classify("NO_REPLY", 1), DG_RUN_ACTED);
    ck_assert_int_eq(dg_run_classify("done, see the file", 3), DG_RUN_SPOKE);
}
END_TEST

START_TEST(test_run_outcomes)
{
    ck_assert_int_eq(dg_run_classify("NO_REPLY", 0), DG_RUN_SILENT);
    ck_assert_int_eq(dg_run_classify("**no_reply**\n", 0), DG_RUN_SILENT);
    ck_assert_int_eq(dg_run_classify("", 0), DG_RUN_SILENT);
    ck_assert_int_eq(dg_run_classify(" \n", 0), DG_RUN_SILENT);
    ck_assert_int_eq(dg_run_classify(NULL, 0), DG_RUN_SILENT);
    ck_assert_int_eq(dg_run_classify("3", 0), DG_RUN_SPOKE);
    ck_assert_str_eq(dg_run_outcome_name(DG_RUN_ACTED), "acted");
}
END_TEST

START_TEST(test_edges_of_tokens_and_fences)
{
    /* A lone run of underscores is decoration; a token longer than any
     * decorated token could be is speech. */
    ck_assert(dg_silent_text("NO_REPLY ___"));
    char longtok[128];
    memset(longtok, 'x', sizeof longtok - 1);
    longtok[sizeof longtok - 1] = '\0';
    char text[160];
    snprintf(text, sizeof text, "NO_REPLY %s", longtok);
    ck_assert(!dg_silent_text(text));
    memset(longtok, '_', sizeof longtok - 1);
    snprintf(text, sizeof text, "NO_REPLY %s", longtok); /* long, but only underscores */
    ck_assert(!dg_silent_text(text));
    /* A fence with text on its info line is no fence: judged as text. */
    ck_assert(!dg_silent_text("```json {\"action\":\"NO_REPLY\"}```"));
    /* Several code spans are not one: each token is judged. */
    ck_assert(dg_silent_text("`NO_REPLY` `NO_REPLY`"));
    ck_assert(!dg_silent_text("`NO_REPLY` `hello`"));
    ck_assert(!dg_silent_text("``````"));
    ck_assert_str_eq(dg_run_outcome_name(DG_RUN_SPOKE), "spoke");
    ck_assert_str_eq(dg_run_outcome_name(DG_RUN_SILENT), "silent");
    ck_assert_str_eq(dg_run_outcome_name((dg_run_outcome)42), "unknown");
}
END_TEST

Suite *make_silent_suite(void)
{
    Suite *s = suite_create("silent");
    TCase *tc = tcase_create("rules");
    tcase_add_test(tc, test_plain_and_case_insensitive);
    tcase_add_test(tc, test_decorated_and_multi_line_tokens_are_silent);
    tcase_add_test(tc, test_json_forms_are_silent);
    tcase_add_test(tc, test_speech_is_not_silent);
    tcase_add_test(tc, test_fenced_and_escaped_forms_are_silent);
    tcase_add_test(tc, test_tool_calls_without_text_are_not_silent);
    tcase_add_test(tc, test_run_outcomes);
    tcase_add_test(tc, test_edges_of_tokens_and_fences);
    suite_add_tcase(s, tc);
    return s;
}
