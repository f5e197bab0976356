/*
 * store_saga_case.c -- see store_saga_case.h.
 */
#include "store_saga_case.h"

#include <check.h>
#include <string.h>

#include "status.h"
#include "store_tool_calls.h"

#define TOOL "discord_channel_create"

static void unfinished(dg_store *st, int64_t before, dg_tool_call_pending **v, size_t *n)
{
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    ck_assert_int_eq(dg_store_tool_calls_unfinished(st, TOOL, before, 8, v, n), DG_OK);
    dg_store_rollback(st);
}

void store_saga_case_run(dg_store *st)
{
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    ck_assert_int_eq(dg_store_tool_call_intent(st, TOOL, "call-1", "00000000000000aa", 1000),
                     DG_OK);
    ck_assert_int_eq(dg_store_tool_call_note(st, TOOL, "call-1", "00000000000000aa", NULL,
                                             "C0WORK0001", "release-plan", "alpha"),
                     DG_OK);
    /* A plain channel's intent notes no origin: never undone. */
    ck_assert_int_eq(dg_store_tool_call_intent(st, TOOL, "call-2", "00000000000000bb", 1000),
                     DG_OK);
    /* No pending row of that key: nothing noted. */
    ck_assert_int_eq(
        dg_store_tool_call_note(st, TOOL, "call-9", "00000000000000aa", "C1", NULL, NULL, NULL),
        DG_ERR_NOT_FOUND);
    ck_assert_int_eq(dg_store_commit(st), DG_OK);

    dg_tool_call_pending *v = NULL;
    size_t n = 0;
    unfinished(st, 1000, &v, &n); /* started at 1000: not before it */
    ck_assert_uint_eq(n, 0);
    dg_tool_call_pending_free(v, n);
    unfinished(st, 2000, &v, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(v[0].call_id, "call-1");
    ck_assert_str_eq(v[0].fingerprint, "00000000000000aa");
    ck_assert_ptr_null(v[0].row.channel_id);
    ck_assert_str_eq(v[0].row.origin_channel_id, "C0WORK0001");
    ck_assert_str_eq(v[0].row.summary_path, "release-plan");
    ck_assert_str_eq(v[0].row.initiator, "alpha");
    dg_tool_call_pending_free(v, n);

    /* The channel made: its id joins what was noted. */
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    ck_assert_int_eq(dg_store_tool_call_note(st, TOOL, "call-1", "00000000000000aa", "C0ROOM0001",
                                             NULL, NULL, NULL),
                     DG_OK);
    ck_assert_int_eq(dg_store_commit(st), DG_OK);
    unfinished(st, 2000, &v, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(v[0].row.channel_id, "C0ROOM0001");
    ck_assert_str_eq(v[0].row.summary_path, "release-plan");
    ck_assert_str_eq(v[0].row.initiator, "alpha");
    dg_tool_call_pending_free(v, n);

    /* Forgotten: gone; a done row is not forgotten. */
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    ck_assert_int_eq(dg_store_tool_call_forget(st, TOOL, "call-1", "00000000000000aa"), DG_OK);
    dg_tool_call_row done = {.channel_id = "C0ROOM0002"};
    ck_assert_int_eq(dg_store_tool_call_done(st, TOOL, "call-2", "00000000000000bb", &done, 1500),
                     DG_OK);
    ck_assert_int_eq(dg_store_tool_call_forget(st, TOOL, "call-2", "00000000000000bb"), DG_OK);
    ck_assert_int_eq(dg_store_commit(st), DG_OK);
    unfinished(st, 2000, &v, &n);
    ck_assert_uint_eq(n, 0);
    dg_tool_call_pending_free(v, n);
    dg_tool_call_row row;
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    ck_assert_int_eq(dg_store_tool_call_get(st, TOOL, "call-1", "00000000000000aa", &row), DG_OK);
    ck_assert_int_eq(row.state, DG_TOOL_CALL_NONE);
    ck_assert_int_eq(dg_store_tool_call_get(st, TOOL, "call-2", "00000000000000bb", &row), DG_OK);
    ck_assert_int_eq(row.state, DG_TOOL_CALL_DONE);
    ck_assert_str_eq(row.channel_id, "C0ROOM0002");
    dg_tool_call_row_clear(&row);
    dg_store_rollback(st);
}
