/*
 * check_ctl.c -- build/dirigent-ctl, the operator's read-only view, run as
 * a process against the database of a running plugin (the turn test host):
 * scopes, why (turn transitions with their causes, recorded where the
 * state changes and never by before_model_resolve), discussions and show,
 * outbox; its refusals; and that it writes nothing. ctl_pg runs the same
 * cases on a PostgreSQL store (tests/support/pg_server.h), read with
 * --store-url, plus the PostgreSQL refusals (password never printed).
 */
#include <check.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "openclaw/plugin.h"
#include "pg_server.h"
#include "discuss.h"
#include "store.h"
#include "outbox.h"
#include "store_db.h"
#include "store_cost.h"
#include "store_discuss.h"
#include "store_int.h"
#include "store_turns.h"
#include "store_transitions.h"
#include "testutil.h"
#include "turn_test_host.h"
#include "turns.h"
#include "turns_engine.h"

#define CH1 "300000000000000001"
#define CH2 "300000000000000002"
#define ORIGIN "300000000000000077"

static tth H;
static int msg_seq;

static const char *mid(char *buf)
{
    snprintf(buf, 24, "%d", 880000000 + ++msg_seq);
    return buf;
}

static void setup(void)
{
    msg_seq = 0;
    tth_start(&H, "channel", NULL);
}

static void teardown(void)
{
    tth_free(&H);
}

static char *db_path(void)
{
    return tu_path(H.dir, "dirigent.db");
}

/* The PostgreSQL url of the test host's store (its member is
 * "store":{"url":"..."}), malloc'd; NULL on SQLite. */
static char *store_url(void)
{
    const char *u = strstr(H.store, "postgresql://");
    const char *end = u ? strchr(u, '"') : NULL;
    return end ? strndup(u, (size_t)(end - u)) : NULL;
}

/* Run dirigent-ctl with args (after --db PATH, or --store-url URL on
 * PostgreSQL); its exit status, stdout into *out (malloc'd, caller frees;
 * may be NULL). */
static int ctl(char **out, const char *a1, const char *a2, const char *a3, const char *a4)
{
    char *bin = tu_path(tu_build_dir(), "dirigent-ctl");
    char *url = store_url();
    char *db = url ? url : db_path();
    char *outp = tu_path(H.dir, "ctl.out");
    char *errp = tu_path(H.dir, "ctl.err");
    const char *argv[] = {bin, url ? "--store-url" : "--db", db, a1, a2, a3, a4, NULL};
    /* Its stderr stays in the test's folder (ctl.err): a refusal the test
     * expects is no failure, and CK_CTL shows it when the status is wrong. */
    int st = tu_run_wait(argv, outp, errp, NULL, 20000);
    free(errp);
    if (out) {
        FILE *f = fopen(outp, "r");
        *out = NULL;
        if (f) {
            size_t cap = 1 << 20, n;
            *out = calloc(1, cap + 1);
            n = fread(*out, 1, cap, f);
            (*out)[n] = '\0';
            fclose(f);
        }
    }
    free(bin);
    free(db);
    free(outp);
    return st;
}

/* What the last dirigent-ctl run wrote to stderr, malloc'd (the caller
 * frees; "" when nothing). */
static char *ctl_said(void)
{
    char *errp = tu_path(H.dir, "ctl.err");
    FILE *f = fopen(errp, "r");
    free(errp);
    char *s = NULL;
    size_t cap = 0;
    if (!f || getdelim(&s, &cap, '\0', f) < 0) {
        free(s);
        s = strdup("");
    }
    if (f)
        fclose(f);
    return s;
}

/* Runs dirigent-ctl (as ctl()) and fails the test, with what it said on
 * stderr, unless it exits with want. */
#define CK_CTL(want, out, a1, a2, a3, a4)                                                          \
    do {                                                                                           \
        int ctl_st_ = ctl(out, a1, a2, a3, a4);                                                    \
        if (ctl_st_ != (want))                                                                     \
            ck_abort_msg("dirigent-ctl %s: exit %d, expected %d; stderr: %s", (a1), ctl_st_,       \
                         (want), ctl_said());                                                      \
    } while (0)

static json_t *ctl_json(const char *a1, const char *a2, const char *a3)
{
    char *out = NULL;
    int st = ctl(&out, "--json", a1, a2, a3);
    ck_assert_msg(st == 0, "dirigent-ctl %s: exit %d: %s; stderr: %s", a1, st, out ? out : "",
                  st == 0 ? "" : ctl_said());
    json_error_t e;
    json_t *j = json_loads(out, 0, &e);
    ck_assert_msg(j != NULL, "not JSON (%s): %s", e.text, out);
    free(out);
    return j;
}

static void three_join_and_talk(void)
{
    const char *abc[] = {TTH_ALPHA, TTH_BRAVO, TTH_CHARLIE};
    for (int i = 0; i < 3; i++)
        ck_assert_int_ge(tth_resolve(&H, abc[i], CH1, NULL), 0);
    char id[24];
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, mid(id), TTH_HUMAN_UID, 0, "hello", NULL), OC_OK);
    ck_assert_int_eq(tth_run(&H, TTH_ALPHA, CH1, NULL, "Hi there.", mid(id)), 1);
    ck_assert_int_eq(tth_run(&H, TTH_BRAVO, CH1, NULL, "NO_REPLY", mid(id)), 0);
}

/* A closed channel has no speaker: scopes says closed and none, though
 * the state the channel was closed in still names one. */
START_TEST(test_scopes_of_a_closed_channel_name_no_speaker)
{
    three_join_and_talk();
    dg_plugin *p = tth_plugin(&H);
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_turns_close_channel(p->turns, CH1, dg_now_ms(p)), OC_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
    json_t *s = ctl_json("scopes", NULL, NULL);
    ck_assert_uint_eq(json_array_size(s), 1);
    json_t *sc = json_array_get(s, 0);
    ck_assert_str_eq(json_string_value(json_object_get(sc, "state")), "closed");
    ck_assert_msg(json_is_null(json_object_get(sc, "speaker")), "speaker %s",
                  json_string_value(json_object_get(sc, "speaker")));
    json_decref(s);
    char *out = NULL;
    CK_CTL(0, &out, "scopes", NULL, NULL, NULL);
    ck_assert_msg(out && strstr(out, " closed    -  ") && !strstr(out, TTH_CHARLIE " "), "%s", out);
    free(out);
}
END_TEST

/* While a budget's breaker holds, scopes says held with nobody speaking and
 * why tells each agent the budget is why its runs are claimed. */
START_TEST(test_scopes_and_why_say_held_while_a_budget_holds)
{
    three_join_and_talk();
    dg_plugin *p = tth_plugin(&H);
    dg_scope sc;
    ck_assert_int_eq(dg_scope_conversation(CH1, &sc), OC_OK);
    dg_turn_state st;
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_store_turns_scope_load(p->store, &sc, &st, NULL), OC_OK);
    st.budget = 1; /* turnsPerHumanMessage, until a resume */
    st.budget_until_ms = 0;
    ck_assert_int_eq(dg_store_turns_scope_save(p->store, &sc, NULL, &st, 1, dg_now_ms(p)), OC_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
    json_t *s = ctl_json("scopes", NULL, NULL);
    json_t *o = json_array_get(s, 0);
    ck_assert_str_eq(json_string_value(json_object_get(o, "state")), "held");
    ck_assert(json_is_null(json_object_get(o, "speaker")));
    json_decref(s);
    json_t *w = ctl_json("why", CH1, TTH_CHARLIE);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(w, "agent"), "gets")),
                     "claimed");
    ck_assert_ptr_nonnull(
        strstr(json_string_value(json_object_get(json_object_get(w, "agent"), "because")),
               "a budget of this conversation is reached"));
    json_decref(w);
}
END_TEST

START_TEST(test_scopes_and_why_on_a_live_database)
{
    three_join_and_talk();
    json_t *s = ctl_json("scopes", NULL, NULL);
    ck_assert_uint_eq(json_array_size(s), 1);
    json_t *sc = json_array_get(s, 0);
    ck_assert_str_eq(json_string_value(json_object_get(sc, "channelId")), CH1);
    ck_assert_str_eq(json_string_value(json_object_get(sc, "scope")), "conversation");
    ck_assert_str_eq(json_string_value(json_object_get(sc, "state")), "speaking");
    ck_assert_str_eq(json_string_value(json_object_get(sc, "speaker")), TTH_CHARLIE);
    /* alpha wrote the latest message: it counts as having passed on it. */
    ck_assert_str_eq(json_string_value(json_object_get(sc, "passed")), TTH_ALPHA "," TTH_BRAVO);
    ck_assert_uint_eq(json_array_size(json_object_get(sc, "order")), 3);
    json_decref(s);

    json_t *w = ctl_json("why", CH1, TTH_BRAVO);
    json_t *tr = json_object_get(w, "transitions");
    ck_assert_uint_ge(json_array_size(tr), 3);
    /* Newest first: bravo's pass, alpha's speech, the human's message. */
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tr, 0), "cause")),
                     "run of " TTH_BRAVO " ended: passed (silent)");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tr, 0), "speakerBefore")),
                     TTH_BRAVO);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tr, 0), "speakerAfter")),
                     TTH_CHARLIE);
    size_t n = json_array_size(tr);
    int spoke = 0;
    for (size_t i = 1; i < n; i++)
        spoke |= !strcmp(json_string_value(json_object_get(json_array_get(tr, i), "cause")),
                         "run of " TTH_ALPHA " ended: spoke");
    ck_assert(spoke);
    ck_assert_ptr_nonnull(
        strstr(json_string_value(json_object_get(json_array_get(tr, n - 1), "cause")),
               "from human " TTH_HUMAN_UID));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(w, "agent"), "gets")),
                     "claimed");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(w, "agent"), "because")),
                     "it does not hold the turn");
    json_decref(w);
    /* before_model_resolve records nothing. */
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(tth_resolve(&H, TTH_BRAVO, CH1, NULL), 1);
    w = ctl_json("why", CH1, NULL);
    ck_assert_uint_eq(json_array_size(json_object_get(w, "transitions")), n);
    json_decref(w);
    /* The text form names the causes too. */
    char *out = NULL;
    CK_CTL(0, &out, "why", CH1, TTH_CHARLIE, NULL);
    ck_assert_ptr_nonnull(strstr(out, "run of " TTH_ALPHA " ended: spoke"));
    ck_assert_ptr_nonnull(strstr(out, TTH_CHARLIE " gets a real model run: it holds the turn"));
    free(out);
}
END_TEST

/* The log is bounded: the newest DG_TRANSITIONS_KEEP rows per scope. */
START_TEST(test_transitions_are_pruned)
{
    three_join_and_talk();
    char id[24];
    for (int i = 0; i < DG_TRANSITIONS_KEEP; i++) {
        ck_assert_int_eq(tth_msg(&H, CH1, NULL, mid(id), TTH_HUMAN_UID, 0, "again", NULL), OC_OK);
        /* Whoever holds the turn speaks: the state changes every round. */
        const char *abc[] = {TTH_ALPHA, TTH_BRAVO, TTH_CHARLIE};
        for (int k = 0; k < 3; k++)
            ck_assert_int_ge(tth_run(&H, abc[k], CH1, NULL, "Once more.", mid(id)), 0);
    }
    json_t *w = ctl_json("why", CH1, NULL);
    ck_assert_uint_eq(json_array_size(json_object_get(w, "transitions")), DG_TRANSITIONS_KEEP);
    json_decref(w);
}
END_TEST

static void add_transition(dg_store *st, const char *message_id, int64_t at_ms, const char *cause)
{
    dg_transition t = {.at_ms = at_ms,
                       .scope = "conversation",
                       .cause = (char *)cause,
                       .speaker_before = TTH_ALPHA,
                       .speaker_after = TTH_BRAVO,
                       .state = "speaking",
                       .passed = "",
                       .agent_msgs = 1,
                       .message_id = message_id};
    ck_assert_int_eq(dg_store_transition_add(st, "700", &t), OC_OK);
}

/* A message's transition is kept in its dedup mark, the others in the log;
 * the list merges both newest first; pruning the marks moves what they
 * carried to the log, which keeps the newest DG_TRANSITIONS_KEEP per scope. */
START_TEST(test_message_transitions_live_in_their_marks)
{
    char *dir = tu_mkdtemp(), *db = tu_db_target(dir);
    dg_store *st = NULL;
    char err[256];
    ck_assert_msg(dg_store_open(db, &st, err, sizeof err) == OC_OK, "%s", err);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    int fresh = 0;
    char id[24], cause[64];
    for (int i = 0; i < DG_TRANSITIONS_KEEP + 8; i++) {
        snprintf(id, sizeof id, "9%017d", i);
        ck_assert_int_eq(dg_store_turns_seen_claim(st, "700", id, 1000 + i, &fresh), OC_OK);
        ck_assert_int_eq(fresh, 1);
        snprintf(cause, sizeof cause, "message %d", i);
        add_transition(st, id, 1000 + i, cause);
        if (i == 3)
            add_transition(st, NULL, 1000 + i, "a timeout"); /* no message: the log */
    }
    add_transition(st, "9999", 2000, "a message without a mark"); /* the log too */
    long marks = 0;
    ck_assert_int_eq(dg_store_turns_count(st, "seen", &marks), OC_OK);
    ck_assert_int_eq(marks, DG_TRANSITIONS_KEEP + 8);
    dg_stmt *q = dg_store_stmt(st, "SELECT count(*) FROM turn_transitions");
    ck_assert_int_eq(dg_step(q), DG_ROW);
    ck_assert_int_eq(dg_col_int64(q, 0), 2);
    dg_reset(q);
    dg_transition *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(dg_store_transitions_list(st, "700", NULL, 3, &v, &n), OC_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(v[0].cause, "a message without a mark");
    snprintf(cause, sizeof cause, "message %d", DG_TRANSITIONS_KEEP + 7);
    ck_assert_str_eq(v[1].cause, cause);
    ck_assert_str_eq(v[1].speaker_after, TTH_BRAVO);
    ck_assert_str_eq(v[1].scope, "conversation");
    dg_transitions_free(v, n);
    ck_assert_int_eq(dg_store_transitions_list(st, "700", "conversation", 100, &v, &n), OC_OK);
    ck_assert_uint_eq(n, DG_TRANSITIONS_KEEP + 10);
    ck_assert_str_eq(v[n - 5].cause, "a timeout"); /* between messages 3 and 4 */
    dg_transitions_free(v, n);

    /* Every mark pruned: the log holds the newest KEEP of the scope. */
    long removed = 0;
    ck_assert_int_eq(dg_store_turns_seen_prune(st, 5000, &removed), OC_OK);
    ck_assert_int_eq(removed, DG_TRANSITIONS_KEEP + 8);
    ck_assert_int_eq(dg_store_transitions_list(st, "700", NULL, 100, &v, &n), OC_OK);
    ck_assert_uint_eq(n, DG_TRANSITIONS_KEEP);
    ck_assert_str_eq(v[0].cause, "a message without a mark");
    snprintf(cause, sizeof cause, "message %d", DG_TRANSITIONS_KEEP + 7);
    ck_assert_str_eq(v[1].cause, cause);
    snprintf(cause, sizeof cause, "message %d", 9);
    ck_assert_str_eq(v[n - 1].cause, cause);
    dg_transitions_free(v, n);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    dg_store_close(st);
    tu_rmtree(dir);
    free(dir);
    free(db);
}
END_TEST

START_TEST(test_discussions_show_and_outbox)
{
    dg_plugin *p = tth_plugin(&H);
    char *order[] = {TTH_ALPHA, TTH_BRAVO};
    dg_discussion d = {
        .discussion_channel_id = CH2,
        .origin_channel_id = ORIGIN,
        .initiator_agent_id = TTH_ALPHA,
        .initiator_session_key = "agent:x",
        .initiator_session_id = "sid",
        .initiator_workspace = "/tmp/ws",
        .discuss_guide = "Decide the release date.",
        .status = DG_DISCUSSION_ACTIVE,
        .created_at_ms = dg_now_ms(p),
        .turn_order = order,
        .n_turn_order = 2,
    };
    int64_t id = 0;
    const char *bc[] = {TTH_BRAVO};
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_store_discussion_insert(p->store, &d, &id), OC_OK);
    ck_assert_int_eq(dg_turns_prefill_discussion(p->turns, CH2, TTH_ALPHA, bc, 1, dg_now_ms(p)),
                     OC_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
    json_t *l = ctl_json("discussions", NULL, NULL);
    ck_assert_uint_eq(json_array_size(l), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(l, 0), "discussionId")), id);
    json_decref(l);
    char ids[24];
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    json_t *s = ctl_json("show", ids, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(s, "channelId")), CH2);
    ck_assert_str_eq(json_string_value(json_object_get(s, "status")), "active");
    ck_assert_str_eq(json_string_value(json_object_get(s, "guide")), "Decide the release date.");
    json_decref(s);
    s = ctl_json("show", CH2, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "discussionId")), id);
    json_decref(s);
    /* Closed: only with --all. */
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_store_discussion_close(p->store, id, "plans/d.md", dg_now_ms(p)), OC_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
    l = ctl_json("discussions", NULL, NULL);
    ck_assert_uint_eq(json_array_size(l), 0);
    json_decref(l);
    l = ctl_json("discussions", "--all", NULL);
    ck_assert_uint_eq(json_array_size(l), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 0), "summaryPath")),
                     "plans/d.md");
    json_decref(l);
    char *out = NULL;
    CK_CTL(1, &out, "show", "999", NULL, NULL);
    free(out);

    /* The outbox: no moderator token here, so what is queued stays pending. */
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_outbox_enqueue(p->store, ORIGIN, "owed", NULL, 0, dg_now_ms(p)), OC_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
    json_t *o = ctl_json("outbox", NULL, NULL);
    ck_assert_int_ge(json_integer_value(json_object_get(o, "pending")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "failed")), 0);
    ck_assert(json_is_integer(json_object_get(o, "oldestPendingAgeSec")));
    ck_assert_uint_ge(json_array_size(json_object_get(o, "pendingRows")), 1);
    json_decref(o);
}
END_TEST

/* Usage errors exit 2, a database that is not dirigent's exits 1, and
 * nothing is ever written: the file's bytes stay the same. */
START_TEST(test_refusals_and_read_only)
{
    three_join_and_talk();
    tth_stop_plugin(&H);
    char *db = db_path();
    char *before = NULL;
    {
        FILE *f = fopen(db, "rb");
        ck_assert_ptr_nonnull(f);
        before = calloc(1, 4 << 20);
        size_t n = fread(before, 1, 4 << 20, f);
        fclose(f);
        ck_assert_uint_gt(n, 0);
    }
    char *out = NULL;
    CK_CTL(0, &out, "scopes", NULL, NULL, NULL);
    free(out);
    CK_CTL(2, NULL, "why", NULL, NULL, NULL);
    CK_CTL(2, NULL, "nonsense", NULL, NULL, NULL);
    CK_CTL(2, NULL, "scopes", "--all", NULL, NULL);
    FILE *f = fopen(db, "rb");
    char *after = calloc(1, 4 << 20);
    size_t n = fread(after, 1, 4 << 20, f);
    fclose(f);
    ck_assert_int_eq(memcmp(before, after, n), 0);
    free(before);
    free(after);
    /* Not a dirigent database. */
    char *other = tu_path(H.dir, "other.txt");
    ck_assert_int_eq(tu_write_file(other, "not sqlite at all, just text\n"), 0);
    char *bin = tu_path(tu_build_dir(), "dirigent-ctl");
    const char *argv[] = {bin, "--db", other, "scopes", NULL};
    ck_assert_int_eq(tu_run_wait(argv, NULL, NULL, NULL, 20000), 1);
    const char *argv2[] = {bin, "scopes", NULL};
    ck_assert_int_eq(tu_run_wait(argv2, NULL, NULL, NULL, 20000), 2);
    free(bin);
    free(other);
    free(db);
}
END_TEST

/* Read a file whole (test helper); malloc'd, NULL when missing. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Runs dirigent-ctl with args after the binary (no --db added); the exit
 * status, stdout and stderr into *out / *err (malloc'd). */
static int ctl_raw(const char *const *args, char **out, char **err);

START_TEST(test_why_names_the_rule_and_the_agent)
{
    three_join_and_talk();
    char *out = NULL, *err = NULL;
    /* A channel name where an id is wanted: refused, naming the rule. */
    CK_CTL(2, &out, "why", "notasnowflake", NULL, NULL);
    free(out);
    CK_CTL(2, &out, "why", "general", TTH_BRAVO, NULL);
    free(out);
    CK_CTL(2, &out, "show", "#general", NULL, NULL);
    free(out);
    char *db = db_path();
    const char *why_name[] = {"--db", db, "why", "general", NULL};
    ck_assert_int_eq(ctl_raw(why_name, &out, &err), 2);
    ck_assert_msg(strstr(err, "CHANNEL \"general\" is not a channel id: it must be a Discord "
                              "snowflake, 1-20 decimal digits") &&
                      strstr(err, "or a Slack id"),
                  "%s", err);
    ck_assert_ptr_null(strstr(out, "no turn transitions"));
    free(out);
    free(err);
    /* A Slack channel id is a channel id: read, with nothing recorded yet. */
    const char *why_slack[] = {"--db", db, "why", "C0WORK0001", NULL};
    ck_assert_int_eq(ctl_raw(why_slack, &out, &err), 0);
    ck_assert_msg(strstr(out, "no turn transitions"), "%s", out);
    free(out);
    free(err);
    /* An agent that is not in the order, in words. */
    CK_CTL(0, &out, "why", CH1, "nosuchagent", NULL);
    ck_assert_ptr_null(strstr(out, "gets not in"));
    ck_assert_msg(strstr(out,
                         "nosuchagent is not managed here: it is not in this channel's "
                         "turn order (it is not one of the plugin's configured agents, or it "
                         "has not been seen in this channel yet), so its runs go on as usual\n"),
                  "%s", out);
    free(out);
    /* A non-speaker is claimed on a host with claim hooks (the default),
     * switched to the no-reply model with --no-claim-hooks. */
    CK_CTL(0, &out, "why", CH1, TTH_BRAVO, NULL);
    ck_assert_msg(strstr(out, TTH_BRAVO "'s runs are claimed (no model call): it does not hold "
                                        "the turn\n"),
                  "%s", out);
    ck_assert_ptr_null(strstr(out, "no-reply"));
    ck_assert_uint_gt(strlen(out), 0);
    ck_assert_int_eq(out[strlen(out) - 1], '\n');
    free(out);
    CK_CTL(0, &out, "--no-claim-hooks", "why", CH1, TTH_BRAVO);
    ck_assert_msg(strstr(out, TTH_BRAVO " gets the no-reply model: it does not hold the turn\n"),
                  "%s", out);
    free(out);
    CK_CTL(0, &out, "--json", "why", CH1, NULL);
    ck_assert_int_eq(out[strlen(out) - 1], '\n');
    free(out);
    /* --version, like the other programs. */
    const char *version[] = {"--version", NULL};
    ck_assert_int_eq(ctl_raw(version, &out, &err), 0);
    ck_assert_msg(strstr(out, "dirigent-ctl " DG_VERSION " (store schema ") == out, "%s", out);
    free(out);
    free(err);
    /* status: the store in a few lines. */
    CK_CTL(0, &out, "status", NULL, NULL, NULL);
    ck_assert_msg(strstr(out, "scopes       1 (speaking 1, dormant 0, resting 0, closed 0)\n"),
                  "%s", out);
    ck_assert_msg(strstr(out, "outbox       pending 0, sent 0, failed 0\n"), "%s", out);
    free(out);
    json_t *st = ctl_json("status", NULL, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(st, "scopes"), "speaking")),
                     1);
    ck_assert_int_eq(json_integer_value(json_object_get(st, "activeDiscussions")), 0);
    json_decref(st);
    free(db);
}
END_TEST

/* --openclaw-config: the store an OpenClaw config names, ${VAR}s and all. */
START_TEST(test_store_from_an_openclaw_config)
{
    three_join_and_talk();
    char *db = db_path();
    char *conf = tu_path(H.dir, "openclaw.json"), *text = NULL;
    ck_assert_int_ge(asprintf(&text,
                              "{\"plugins\":{\"entries\":{\"dirigent\":{\"config\":{"
                              "\"dbPath\":\"%s\",\"bridge\":{\"settleMs\":5},"
                              "\"discord\":{\"moderatorUserId\":\"${DG_TEST_MOD}\"}}}}}}",
                              db),
                     0);
    ck_assert_int_eq(tu_write_file(conf, text), 0);
    setenv("DG_TEST_MOD", "1000000000000000001", 1);
    const char *status[] = {"--openclaw-config", conf, "status", NULL};
    char *out = NULL, *err = NULL;
    ck_assert_int_eq(ctl_raw(status, &out, &err), 0);
    ck_assert_msg(strstr(out, "scopes       1 (speaking 1"), "%s%s", out, err);
    char *store_line = NULL;
    ck_assert_int_ge(asprintf(&store_line, "store        %s\n", db), 0);
    ck_assert_msg(strstr(out, store_line), "%s", out);
    free(store_line);
    free(out);
    free(err);
    /* A config whose dbPath does not exist yet says so. */
    free(text);
    ck_assert_int_ge(asprintf(&text,
                              "{\"plugins\":{\"entries\":{\"dirigent\":{\"config\":{"
                              "\"dbPath\":\"%s/none/x.db\",\"discord\":{"
                              "\"moderatorUserId\":\"1000000000000000001\"}}}}}}",
                              H.dir),
                     0);
    ck_assert_int_eq(tu_write_file(conf, text), 0);
    ck_assert_int_eq(ctl_raw(status, &out, &err), 1);
    ck_assert_msg(strstr(err, "no database at ") && strstr(err, "the plugin creates it"), "%s",
                  err);
    free(out);
    free(err);
    /* Not both. */
    const char *both[] = {"--openclaw-config", conf, "--db", db, "status", NULL};
    ck_assert_int_eq(ctl_raw(both, &out, &err), 2);
    free(out);
    free(err);
    free(text);
    free(conf);
    free(db);
}
END_TEST

static int ctl_raw(const char *const *args, char **out, char **err)
{
    char *bin = tu_path(tu_build_dir(), "dirigent-ctl");
    char *outp = tu_path(H.dir, "raw.out"), *errp = tu_path(H.dir, "raw.err");
    const char *argv[16] = {bin};
    for (size_t i = 0; args[i] && i < 14; i++)
        argv[i + 1] = args[i];
    int st = tu_run_wait(argv, outp, errp, NULL, 20000);
    *out = slurp(outp);
    *err = slurp(errp);
    free(bin);
    free(outp);
    free(errp);
    return st;
}


/* dirigent-ctl's exit status on argv with the environment variable
 * DIRIGENT_STORE_URL set to env (NULL: removed); stderr into *err. */
static int ctl_env(const char *const *argv, const char *env, char **err)
{
    char *errp = tu_path(H.dir, "ctl.err");
    const char *unset[] = {"DIRIGENT_STORE_URL", NULL};
    if (env)
        setenv("DIRIGENT_STORE_URL", env, 1);
    int st = tu_run_wait(argv, NULL, errp, env ? NULL : unset, 20000);
    unsetenv("DIRIGENT_STORE_URL");
    *err = slurp(errp);
    ck_assert_ptr_nonnull(*err);
    free(errp);
    return st;
}

/* PostgreSQL: the env variable names the store when no option does (the
 * text output is the same as on SQLite); a database that is not ours is
 * refused and left without a table (the plugin's open would have created
 * the schema: dirigent-ctl reads only); a wrong password, a refused url and
 * --db with --store-url are refused; the password is never printed. */
START_TEST(test_pg_store_url_env_refusals_and_no_password)
{
    three_join_and_talk();
    char *url = store_url();
    ck_assert_ptr_nonnull(url);
    char *bin = tu_path(tu_build_dir(), "dirigent-ctl");
    char *outp = tu_path(H.dir, "env.out");
    const char *argv_env[] = {bin, "scopes", NULL};
    setenv("DIRIGENT_STORE_URL", url, 1);
    ck_assert_int_eq(tu_run_wait(argv_env, outp, NULL, NULL, 20000), 0);
    unsetenv("DIRIGENT_STORE_URL");
    char *text = slurp(outp);
    ck_assert_ptr_nonnull(strstr(text, CH1));
    ck_assert_ptr_nonnull(strstr(text, "conversation"));
    ck_assert_ptr_nonnull(strstr(text, TTH_CHARLIE));
    free(text);

    char *err = NULL;
    /* A fresh schema: not a dirigent store; nothing created there. */
    char *empty = pgs_fresh_url();
    const char *argv_empty[] = {bin, "--store-url", empty, "scopes", NULL};
    ck_assert_int_eq(ctl_env(argv_empty, NULL, &err), 1);
    ck_assert_msg(strstr(err, "not a dirigent store") && !strstr(err, PGS_PASSWORD), "%s", err);
    free(err);
    ck_assert_int_eq(pgs_value(empty, "SELECT count(*) FROM information_schema.tables WHERE "
                                      "table_schema = current_schema()"),
                     0);
    /* The same through the environment. */
    ck_assert_int_eq(ctl_env(argv_env, empty, &err), 1);
    ck_assert_msg(strstr(err, "not a dirigent store") && !strstr(err, PGS_PASSWORD), "%s", err);
    free(err);
    /* A wrong password: refused, and neither password is printed. */
    char *bad = strdup(url);
    char *pw = strstr(bad, PGS_PASSWORD);
    ck_assert_ptr_nonnull(pw);
    memcpy(pw, "wrong-Passw0rd-4711", strlen(PGS_PASSWORD) < 19 ? strlen(PGS_PASSWORD) : 19);
    const char *argv_bad[] = {bin, "--store-url", bad, "outbox", NULL};
    ck_assert_int_eq(ctl_env(argv_bad, NULL, &err), 1);
    ck_assert_msg(!strstr(err, PGS_PASSWORD) && !strstr(err, "wrong-Passw0rd") &&
                      strstr(err, "cannot connect"),
                  "%s", err);
    free(err);
    /* Usage: a non-url, and both options. */
    const char *argv_nourl[] = {bin, "--store-url", "/tmp/x.db", "scopes", NULL};
    ck_assert_int_eq(ctl_env(argv_nourl, NULL, &err), 2);
    ck_assert_msg(strstr(err, "must be a postgresql://"), "%s", err);
    free(err);
    const char *argv_both[] = {bin, "--db", "/tmp/x.db", "--store-url", url, "scopes", NULL};
    ck_assert_int_eq(ctl_env(argv_both, NULL, &err), 2);
    ck_assert_msg(strstr(err, "not both") && !strstr(err, PGS_PASSWORD), "%s", err);
    free(err);
    /* --db wins over the environment. */
    char *db = tu_path(H.dir, "nothing-here.db");
    const char *argv_db[] = {bin, "--db", db, "scopes", NULL};
    ck_assert_int_eq(ctl_env(argv_db, url, &err), 1);
    ck_assert_msg(strstr(err, db) != NULL, "%s", err);
    free(err);
    free(db);
    free(bad);
    free(empty);
    free(outp);
    free(bin);
    free(url);
}
END_TEST

/* Runs in the plugin's cost ledger at wall-clock times (dirigent-ctl
 * reads its --since against the wall clock): CH1 a granted run two hours
 * ago that reported usage and a claimed one an hour ago; CH2 a granted
 * run three days ago whose host reported nothing. */
static void cost_rows(void)
{
    int64_t now = (int64_t)time(NULL) * 1000;
    dg_plugin *p = tth_plugin(&H);
    struct {
        const char *ch, *id;
        int64_t at;
        dg_cost_verdict v;
    } runs[] = {{CH1, "cost-1", now - 2 * 3600000, DG_COST_GRANTED},
                {CH1, "cost-2", now - 3600000, DG_COST_CLAIMED},
                {CH2, "cost-3", now - 3 * 86400000LL, DG_COST_GRANTED}};
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    for (size_t i = 0; i < 3; i++) {
        dg_cost_run r = {.session_key = "ctl-cost",
                         .run_id = runs[i].id,
                         .channel_id = runs[i].ch,
                         .scope = "~conv",
                         .agent_id = TTH_ALPHA,
                         .at_ms = runs[i].at,
                         .verdict = runs[i].v};
        ck_assert_int_eq(dg_store_cost_run(p->store, &r), OC_OK);
    }
    dg_cost_run u = {.session_key = "ctl-cost", .run_id = "cost-1"};
    ck_assert_int_eq(dg_store_cost_usage(p->store, &u, "m-big", 2, 30000, 2000), OC_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
}

/* cost: every channel, one channel, --since as a span and as an ISO date,
 * the JSON; the refused values exit 2 naming the flag and the forms. */
START_TEST(test_cost_report)
{
    cost_rows();
    char *out = NULL;
    CK_CTL(0, &out, "cost", NULL, NULL, NULL);
    ck_assert_msg(strstr(out, "cost of every channel, every run the store keeps, per UTC day:\n"
                              "(no plugin config given: no prices;") &&
                      strstr(out, "channel " CH1 ":\n") && strstr(out, "channel " CH2 ":\n") &&
                      strstr(out, "model calls n/a") &&
                      strstr(out, "\ntotal: 3 runs, 2 model calls, 2 granted, 1 avoided "
                                  "(claimed 1, swapped 0), 30,000 tokens in / 2,000 out\n") &&
                      strstr(out, "money: not shown, no price for m-big"),
                  "%s", out);
    free(out);
    CK_CTL(0, &out, "cost", "--since", "24h", NULL);
    ck_assert_msg(strstr(out, "runs since ") && !strstr(out, CH2) &&
                      strstr(out, "\ntotal: 2 runs, 2 model calls, 1 granted, 1 avoided"),
                  "%s", out);
    free(out);
    CK_CTL(0, &out, "cost", "--since", "2020-01-01", NULL);
    ck_assert_msg(strstr(out, "runs since 2020-01-01T00:00:00Z") && strstr(out, "total: 3 runs"),
                  "%s", out);
    free(out);
    CK_CTL(0, &out, "cost", "--since", "2999-12-31T23:59:59Z", NULL);
    ck_assert_msg(strstr(out, "no agent runs recorded\n"), "%s", out);
    free(out);
    json_t *j = ctl_json("cost", "--channel", CH2);
    ck_assert_str_eq(json_string_value(json_object_get(j, "channelId")), CH2);
    json_t *tot = json_object_get(j, "totals");
    ck_assert_int_eq(json_integer_value(json_object_get(tot, "runs")), 1);
    ck_assert(json_is_null(json_object_get(tot, "modelCalls")));
    ck_assert_uint_eq(json_array_size(json_object_get(j, "days")), 1);
    json_decref(j);

    const char *bad[][3] = {{"--since", "yesterday", "--since \"yesterday\" is not a time"},
                            {"--since", "0h", "24h, 7d"},
                            {"--since", "2026-02-30", "2026-12-01T09:30"},
                            {"--since", "7w", "--since"},
                            {"--channel", "general", "--channel \"general\" is not a channel"},
                            {"--since", NULL, "--since needs a value"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *err = NULL;
        char *db = db_path(), *url = store_url();
        const char *args[] = {
            url ? "--store-url" : "--db", url ? url : db, "cost", bad[i][0], bad[i][1], NULL};
        ck_assert_int_eq(ctl_raw(args, &out, &err), 2);
        ck_assert_msg(strstr(err, bad[i][2]), "case %zu: %s", i, err);
        free(out);
        free(err);
        free(db);
        free(url);
    }
    /* --since belongs to cost. */
    CK_CTL(2, NULL, "scopes", "--since", "24h", NULL);
    CK_CTL(2, NULL, "cost", "extra", NULL, NULL);
}
END_TEST

/* With the OpenClaw config the plugin config's prices turn tokens into
 * money. */
START_TEST(test_cost_priced_from_the_openclaw_config)
{
    cost_rows();
    char *db = db_path();
    char *conf = tu_path(H.dir, "openclaw.json"), *text = NULL;
    ck_assert_int_ge(asprintf(&text,
                              "{\"plugins\":{\"entries\":{\"dirigent\":{\"config\":{"
                              "\"dbPath\":\"%s\",\"discord\":{\"moderatorUserId\":"
                              "\"1000000000000000001\"},\"prices\":{\"m-big\":{"
                              "\"inputPerMillion\":3,\"outputPerMillion\":15}}}}}}}",
                              db),
                     0);
    ck_assert_int_eq(tu_write_file(conf, text), 0);
    const char *args[] = {"--openclaw-config", conf, "cost", "--channel", CH1, NULL};
    char *out = NULL, *err = NULL;
    ck_assert_int_eq(ctl_raw(args, &out, &err), 0);
    ck_assert_msg(strstr(out, "cost of channel " CH1 ", every run the store keeps") &&
                      !strstr(out, "no plugin config given") &&
                      strstr(out, "\ntotal: 2 runs, 2 model calls, 1 granted, 1 avoided (claimed "
                                  "1, swapped 0), 30,000 tokens in / 2,000 out, $0.12\n"),
                  "%s%s", out, err);
    free(out);
    free(err);
    free(text);
    free(conf);
    free(db);
}
END_TEST

/* --db '' or --store-url '' is a usage error (2), as a missing value is. */
START_TEST(test_an_empty_store_option_is_a_usage_error)
{
    char *out = NULL, *err = NULL;
    const char *db[] = {"--db", "", "scopes", NULL};
    ck_assert_int_eq(ctl_raw(db, &out, &err), 2);
    ck_assert_msg(strstr(err, "--db") && strstr(err, "empty"), "%s", err);
    free(out);
    free(err);
    const char *url[] = {"--store-url", "", "--json", "outbox", NULL};
    ck_assert_int_eq(ctl_raw(url, &out, &err), 2);
    free(out);
    free(err);
}
END_TEST

/* Stored text that is not UTF-8 (a file written by hand or by a damaged
 * writer): show and outbox print the rows, text and JSON, with the bad
 * bytes replaced, instead of nothing, null or an empty list. */
START_TEST(test_text_that_is_not_utf8_is_shown_replaced)
{
    dg_plugin *p = tth_plugin(&H);
    char *order[] = {TTH_ALPHA, TTH_BRAVO};
    dg_discussion d = {
        .discussion_channel_id = CH2,
        .origin_channel_id = ORIGIN,
        .initiator_agent_id = TTH_ALPHA,
        .initiator_session_key = "agent:x",
        .initiator_session_id = "sid",
        .initiator_workspace = "/tmp/ws",
        .discuss_guide = "Decide \xff\xfe the date.",
        .status = DG_DISCUSSION_ACTIVE,
        .created_at_ms = dg_now_ms(p),
        .turn_order = order,
        .n_turn_order = 2,
    };
    int64_t id = 0;
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_store_discussion_insert(p->store, &d, &id), OC_OK);
    ck_assert_int_eq(dg_outbox_enqueue(p->store, ORIGIN, "owed", NULL, 0, dg_now_ms(p)), OC_OK);
    ck_assert_int_eq(sqlite3_exec(p->store->db,
                                  "UPDATE outbox SET state = 2, done_at_ms = 1,"
                                  " last_error = CAST(x'6e6f20c0ff2e' AS TEXT)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
    char ids[24];
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    char *out = NULL;
    ck_assert_int_eq(ctl(&out, "show", ids, NULL, NULL), 0);
    ck_assert_msg(strstr(out, "guide") && strstr(out, "Decide ?? the date."), "%s", out);
    free(out);
    json_t *j = ctl_json("show", ids, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(j, "guide")), "Decide ?? the date.");
    json_decref(j);
    j = ctl_json("outbox", NULL, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "failed")), 1);
    json_t *rows = json_object_get(j, "failedRows");
    ck_assert_uint_eq(json_array_size(rows), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(rows, 0), "reason")),
                     "no ??.");
    json_decref(j);
    ck_assert_int_eq(ctl(&out, "outbox", NULL, NULL, NULL), 0);
    ck_assert_msg(strstr(out, "no ??.") != NULL, "%s", out);
    free(out);
}
END_TEST

/* A WAL database without its -shm file in a folder the reader cannot
 * write (another user's, a read-only mount): dirigent-ctl reads it. As
 * root, the reader is the user nobody, to whom the folder is read-only. */
START_TEST(test_a_wal_database_in_a_read_only_folder)
{
    three_join_and_talk();
    tth_stop_plugin(&H);
    char *db = db_path();
    char *shm = tu_path(H.dir, "dirigent.db-shm");
    unlink(shm); /* nobody has the database open any more */
    unsigned char head[20] = {0};
    FILE *f = fopen(db, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(head, 1, sizeof head, f), sizeof head);
    fclose(f);
    ck_assert_msg(head[18] == 2 && head[19] == 2, "the test database is not in WAL mode");
    char *outp = tu_path(H.dir, "ro.out");
    ck_assert_int_eq(tu_write_file(outp, ""), 0);
    ck_assert_int_eq(chmod(outp, 0666), 0);
    ck_assert_int_eq(chmod(db, 0644), 0);
    ck_assert_int_eq(chmod(H.dir, 0555), 0);
    char *bin = tu_path(tu_build_dir(), "dirigent-ctl");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct passwd *pw = getuid() == 0 ? getpwnam("nobody") : NULL;
        if (getuid() == 0 && (!pw || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0))
            _exit(99);
        int fd = open(outp, O_WRONLY | O_TRUNC);
        if (fd < 0)
            _exit(98);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(bin, bin, "--db", db, "scopes", (char *)NULL);
        _exit(97);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    chmod(H.dir, 0700);
    char *said = slurp(outp);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit %d: %s", WEXITSTATUS(st),
                  said ? said : "");
    ck_assert_msg(said && strstr(said, CH1), "%s", said ? said : "");
    free(said);
    free(bin);
    free(outp);
    free(shm);
    free(db);
}
END_TEST

/* The cases of ctl and ctl_pg (on_pg: the test host's store is a
 * PostgreSQL database, read with --store-url). */
static Suite *ctl_suite(const char *name, int on_pg)
{
    Suite *s = suite_create(name);
    if (on_pg && pgs_skipped())
        return s;
    TCase *tc = tcase_create(name);
    if (on_pg)
        pgs_on_pg(tc, 1);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_scopes_and_why_on_a_live_database);
    tcase_add_test(tc, test_scopes_and_why_say_held_while_a_budget_holds);
    tcase_add_test(tc, test_scopes_of_a_closed_channel_name_no_speaker);
    tcase_add_test(tc, test_transitions_are_pruned);
    tcase_add_test(tc, test_message_transitions_live_in_their_marks);
    tcase_add_test(tc, test_discussions_show_and_outbox);
    if (on_pg)
        tcase_add_test(tc, test_pg_store_url_env_refusals_and_no_password);
    else
        tcase_add_test(tc, test_refusals_and_read_only); /* bytes of the file */
    if (!on_pg)                                          /* the --db of ctl_raw */
        tcase_add_test(tc, test_why_names_the_rule_and_the_agent);
    if (!on_pg)
        tcase_add_test(tc, test_store_from_an_openclaw_config);
    if (!on_pg) { /* SQLite's own: the file, its bytes, its folder */
        tcase_add_test(tc, test_an_empty_store_option_is_a_usage_error);
        tcase_add_test(tc, test_text_that_is_not_utf8_is_shown_replaced);
        tcase_add_test(tc, test_a_wal_database_in_a_read_only_folder);
    }
    tcase_add_test(tc, test_cost_report);
    if (!on_pg) /* a dbPath in the OpenClaw config */
        tcase_add_test(tc, test_cost_priced_from_the_openclaw_config);
    suite_add_tcase(s, tc);
    return s;
}

Suite *make_ctl_suite(void)
{
    return ctl_suite("ctl", 0);
}

Suite *make_ctl_pg_suite(void)
{
    return ctl_suite("ctl_pg", 1);
}
