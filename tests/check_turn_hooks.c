/*
 * check_turn_hooks.c -- the turn manager through the real hook
 * registration: the plugin is started by a test host (turn_test_host.c)
 * that calls the hooks with JSON the way a gateway does, on a hand-moved
 * clock; moderator messages are read from the outbox table.
 *
 * Covers both session policies, the rules each named test states (a turn
 * advances at agent_end, a tool-only turn keeps the channel awake, ...), and
 * the message side of discussion channels.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "openclaw/plugin.h"
#include "discuss.h"
#include "fake_discord.h"
#include "faultvfs.h"
#include "scope.h"
#include "silent.h"
#include "store.h"
#include "store_test.h"
#include "store_discuss.h"
#include "store_int.h"
#include "store_turns.h"
#include "pg_server.h"
#include "testutil.h"
#include "turn_test_host.h"
#include "turns.h"
#include "turns_engine.h"
#include "turns_engine_test.h"
#include "turns_int.h" /* the writer and its assertion */

#define CH1 "300000000000000001"
#define CH2 "300000000000000002"
#define ORIGIN "300000000000000077"
#define DM "300000000000000099"
#define TH1 "310000000000000001"
#define TH2 "310000000000000002"

static tth H;
static int next_msg = 1;
static json_t *EMPTY_EVENT;
#define EMPTY (EMPTY_EVENT ? EMPTY_EVENT : (EMPTY_EVENT = json_object()))

static const char *mid(char *buf)
{
    snprintf(buf, 24, "4%017d", next_msg++);
    return buf;
}

static void human_says(const char *channel, const char *thread, const char *text,
                       const char *const *mentions)
{
    char id[24];
    ck_assert_int_eq(tth_msg(&H, channel, thread, mid(id), TTH_HUMAN_UID, 0, text, mentions),
                     OC_OK);
}

static void agent_posts(const char *agent, const char *channel, const char *thread,
                        const char *text)
{
    char id[24];
    ck_assert_int_eq(tth_msg(&H, channel, thread, mid(id), tth_uid(agent), 1, text, NULL), OC_OK);
}

static int run(const char *agent, const char *channel, const char *thread, const char *out)
{
    char id[24];
    return tth_run(&H, agent, channel, thread, out, mid(id));
}

static dg_turn_state peek(const char *channel, const char *thread, dg_channel_mode *mode)
{
    dg_scope sc;
    if (thread)
        ck_assert_int_eq(dg_scope_thread(channel, thread, &sc), OC_OK);
    else
        ck_assert_int_eq(dg_scope_conversation(channel, &sc), OC_OK);
    dg_turn_state st;
    int rc = dg_turns_peek(tth_plugin(&H)->turns, &sc, &st, mode, NULL);
    ck_assert_msg(rc == OC_OK, "scope has no state (%s)", oc_status_name(rc));
    return st;
}

/* Which of the agents would get a real model run now (-1: none); fails the
 * test when more than one would. */
static int who_speaks(const char *const *agents, int n, const char *channel, const char *thread)
{
    int speaker = -1;
    for (int i = 0; i < n; i++) {
        int r = tth_resolve(&H, agents[i], channel, thread);
        ck_assert_int_ge(r, 0);
        if (r == 0) {
            ck_assert_msg(speaker < 0, "two speakers: %s and %s", agents[speaker], agents[i]);
            speaker = i;
        }
    }
    return speaker;
}

static const char *const ABC[] = {TTH_ALPHA, TTH_BRAVO, TTH_CHARLIE};

/* alpha, bravo, charlie join the channel in that order (first seen). */
static void join3(const char *channel, const char *thread)
{
    for (int i = 0; i < 3; i++)
        ck_assert_int_ge(tth_resolve(&H, ABC[i], channel, thread), 0);
}

static void setup_channel(void)
{
    tth_start(&H, "channel",
              "\"turn\":{\"maxAgentMessages\":1000},"
              "\"discussion\":{\"reminderAfterSec\":0}");
}

static void setup_thread(void)
{
    tth_start(&H, "thread", "\"turn\":{\"maxAgentMessages\":1000}");
}

static void setup_no_cooldown(void)
{
    tth_start(&H, "channel",
              "\"discussion\":{\"closedNoticeCooldownSec\":0,"
              "\"reminderAfterSec\":0}");
}

static void teardown(void)
{
    json_decref(EMPTY_EVENT);
    EMPTY_EVENT = NULL;
    tth_free(&H);
}

/* ---- a small gateway: every message runs every agent ------------------------ */

typedef struct sim_msg {
    char id[24];
    char sender[24];
    int bot;
    char content[2100];
} sim_msg;

typedef struct sim {
    const char *channel, *thread;
    const char *const *agents;
    int n_agents;
    sim_msg queue[256];
    int qh, qt;
    int outbox_seen;
    int rotate;
    int real_runs, swapped_runs, cancelled, handoffs;
    int last_number, limit;
    int numbers_by[8];
} sim;

static void sim_deliver(sim *s, const char *sender, int bot, const char *content)
{
    ck_assert_int_lt(s->qt, 256);
    sim_msg *m = &s->queue[s->qt++];
    mid(m->id);
    snprintf(m->sender, sizeof m->sender, "%s", sender);
    m->bot = bot;
    snprintf(m->content, sizeof m->content, "%s", content);
    ck_assert_int_eq(tth_msg(&H, s->channel, s->thread, m->id, sender, bot, content, NULL), OC_OK);
}

/* Counting: the speaker says the next number, in strict rotation. */
static void sim_say(sim *s, int idx, char *out, size_t len)
{
    int next = s->last_number + 1;
    if (next > s->limit) {
        snprintf(out, len, "NO_REPLY");
        return;
    }
    ck_assert_msg(idx == (next - 1) % s->n_agents, "%s spoke out of turn (number %d is %s's)",
                  s->agents[idx], next, s->agents[(next - 1) % s->n_agents]);
    s->last_number = next;
    s->numbers_by[idx]++;
    snprintf(out, len, "%d", next);
}

static void sim_round(sim *s)
{
    s->qh++;
    char posted[8][40];
    int n_posted = 0;
    for (int k = 0; k < s->n_agents; k++) {
        int idx = (k + s->rotate) % s->n_agents;
        const char *agent = s->agents[idx];
        int swapped = tth_resolve(&H, agent, s->channel, s->thread);
        ck_assert_int_ge(swapped, 0);
        char out[16];
        if (swapped) {
            s->swapped_runs++;
            snprintf(out, sizeof out, "NO_REPLY");
        } else {
            s->real_runs++;
            sim_say(s, idx, out, sizeof out);
        }
        ck_assert_int_eq(tth_end(&H, agent, s->channel, s->thread, out, 0), OC_OK);
        if (dg_silent_text(out))
            continue;
        if (tth_send(&H, agent, s->channel, s->thread, out)) {
            s->cancelled++;
            continue;
        }
        snprintf(posted[n_posted++], sizeof posted[0], "%d|%s", idx, out);
    }
    s->rotate++;
    /* The posts come back to the gateway after the round. */
    for (int i = 0; i < n_posted; i++) {
        int idx = atoi(posted[i]);
        sim_deliver(s, tth_uid(s->agents[idx]), 1, strchr(posted[i], '|') + 1);
    }
    /* So do the moderator's messages. */
    const char *post = s->thread ? s->thread : s->channel;
    for (;;) {
        char *c = tth_outbox_content(&H, post, s->outbox_seen, NULL);
        if (!c)
            break;
        s->outbox_seen++;
        if (c[0] == '<' && c[1] == '@')
            s->handoffs++;
        sim_deliver(s, TTH_MOD_UID, 1, c);
        free(c);
    }
}

static void sim_run(sim *s, int max_rounds)
{
    for (int r = 0; r < max_rounds && s->qh < s->qt; r++)
        sim_round(s);
    ck_assert_msg(s->qh == s->qt, "the conversation did not settle in %d rounds", max_rounds);
}

static void count_to_eleven(const char *thread)
{
    join3(CH1, thread);
    sim s = {.channel = CH1, .thread = thread, .agents = ABC, .n_agents = 3, .limit = 11};
    sim_deliver(&s, TTH_HUMAN_UID, 0, "Count to 11, one number each, in turn.");
    sim_run(&s, 200);
    ck_assert_int_eq(s.last_number, 11);
    ck_assert_int_eq(s.numbers_by[0], 4);
    ck_assert_int_eq(s.numbers_by[1], 4);
    ck_assert_int_eq(s.numbers_by[2], 3);
    ck_assert_int_eq(s.cancelled, 0);
    /* Real model runs: the 11 numbers plus the passes after 11. */
    ck_assert_int_le(s.real_runs, 11 + 3);
    dg_turn_state st = peek(CH1, thread, NULL);
    ck_assert_int_eq(st.active, 0); /* everyone passed after 11: dormant */
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, thread), -1);
}

START_TEST(test_registers_the_nine_hooks)
{
    static const char *const names[] = {
        "message_received", "before_model_resolve", "before_prompt_build",   "message_sending",
        "agent_end",        "before_agent_reply",   "reply_payload_sending", "model_call_ended",
        "llm_output"};
    ck_assert_int_eq(H.n_hooks, 9);
    for (int i = 0; i < 9; i++) {
        int found = 0;
        for (int j = 0; j < H.n_hooks; j++)
            found |= strcmp(H.hooks[j].name, names[i]) == 0;
        ck_assert_msg(found, "hook %s not registered", names[i]);
    }
}
END_TEST

START_TEST(test_three_agents_count_to_eleven_in_turn)
{
    count_to_eleven(NULL);
}
END_TEST

START_TEST(test_three_agents_count_to_eleven_in_a_thread)
{
    count_to_eleven(TH1);
}
END_TEST

START_TEST(test_thread_policy_two_threads_rotate_independently)
{
    join3(CH1, TH1);
    join3(CH1, TH2);
    human_says(CH1, TH1, "question in thread one", NULL);
    human_says(CH1, TH2, "question in thread two", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, TH1), 0);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, TH2), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, TH1, "answer in one"), 1);
    /* Thread one moved on; thread two did not. */
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, TH1), 1);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, TH2), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, TH2, "answer in two"), 1);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, TH2, "more in two"), 1);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, TH1), 1);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, TH2), 2);
    /* The channel-level conversation holds no turn state of its own. */
    dg_scope sc;
    dg_scope_conversation(CH1, &sc);
    ck_assert_int_eq(dg_turns_peek(tth_plugin(&H)->turns, &sc, NULL, NULL, NULL), OC_ERR_NOT_FOUND);
}
END_TEST

START_TEST(test_channel_policy_threads_share_one_rotation)
{
    join3(CH1, NULL);
    human_says(CH1, TH1, "question in thread one", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, TH1), 0);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, TH2), 0);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, TH1, "answer"), 1);
    /* One rotation for the whole channel: bravo everywhere. */
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, TH2), 1);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1);
    dg_turn_state st = peek(CH1, NULL, NULL);
    ck_assert_int_eq(st.msg_seq, 2);
}
END_TEST

static void dm_one_conversation(void)
{
    json_t *ev = json_pack("{s:s, s:s, s:b, s:s, s:b, s:s, s:[]}", "messageId",
                           "400000000000000901", "channelId", DM, "isDm", 1, "senderId",
                           TTH_HUMAN_UID, "senderIsBot", 0, "content", "hi", "mentions");
    json_t *ctx = json_pack("{s:s}", "channelId", DM);
    ck_assert_int_eq(tth_call(&H, "message_received", ev, ctx, NULL), OC_OK);
    json_decref(ev);
    json_decref(ctx);
    /* The agent's DM session: never swapped (one agent, one conversation). */
    json_t *actx = json_pack("{s:s, s:s, s:s}", "agentId", TTH_ALPHA, "sessionKey",
                             "agent:alpha:discord:direct:" TTH_HUMAN_UID, "channelId", DM);
    json_t *r = NULL;
    ck_assert_int_eq(tth_call(&H, "before_model_resolve", EMPTY, actx, &r), OC_OK);
    ck_assert_ptr_null(r);
    json_decref(actx);
    dg_turn_state st = peek(DM, NULL, NULL);
    ck_assert_int_eq(st.msg_seq, 1);
    dg_scope sc;
    dg_scope_thread(DM, "400000000000000901", &sc);
    ck_assert_int_eq(dg_turns_peek(tth_plugin(&H)->turns, &sc, NULL, NULL, NULL), OC_ERR_NOT_FOUND);
}

START_TEST(test_dm_is_one_conversation_under_channel_policy)
{
    dm_one_conversation();
}
END_TEST

START_TEST(test_dm_is_one_conversation_under_thread_policy)
{
    dm_one_conversation();
}
END_TEST

START_TEST(test_message_ingested_once_across_accounts)
{
    join3(CH1, NULL);
    for (int account = 0; account < 3; account++)
        ck_assert_int_eq(tth_msg(&H, CH1, NULL, "400000000000000500", TTH_HUMAN_UID, 0, "hi", NULL),
                         OC_OK);
    dg_turn_state st = peek(CH1, NULL, NULL);
    ck_assert_int_eq(st.msg_seq, 1);
    /* An agent message reported three times counts once for the guard. */
    for (int account = 0; account < 3; account++)
        ck_assert_int_eq(tth_msg(&H, CH1, NULL, "400000000000000501", TTH_ALPHA_UID, 1, "yo", NULL),
                         OC_OK);
    st = peek(CH1, NULL, NULL);
    ck_assert_int_eq(st.msg_seq, 2);
    ck_assert_int_eq(st.agent_msgs, 1);
}
END_TEST

START_TEST(test_turn_advances_at_agent_end)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    ck_assert_int_eq(tth_end(&H, TTH_ALPHA, CH1, NULL, "my answer", 0), OC_OK);
    /* Before the reply is sent or seen, the gate already moved. */
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1);
    /* And alpha's own reply still goes out. */
    ck_assert_int_eq(tth_send(&H, TTH_ALPHA, CH1, NULL, "my answer"), 0);
    agent_posts(TTH_ALPHA, CH1, NULL, "my answer");
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1);
}
END_TEST

/* agent_end of agent in channel with this runId (tth_end makes a new one). */
static int end_run(const char *agent, const char *channel, const char *output, const char *run_id)
{
    char key[256];
    json_t *ctx = json_pack("{s:s, s:s, s:s, s:s}", "agentId", agent, "sessionKey",
                            tth_session_key(key, sizeof key, agent, channel, NULL), "channelId",
                            channel, "messageProvider", "discord");
    json_t *ev = json_pack("{s:s, s:b, s:s, s:i}", "runId", run_id, "success", 1, "output", output,
                           "toolCalls", 0);
    int rc = tth_call(&H, "agent_end", ev, ctx, NULL);
    json_decref(ev);
    json_decref(ctx);
    return rc;
}

/* A host replaying agent_end (same runId, same session: ocgw after a crash)
 * must not move the turn twice. Here the replay is of bravo's forced
 * NO_REPLY; once the turn has reached bravo, counting it again would pass
 * bravo's real turn. Ignored in the same process and after a restart. */
START_TEST(test_agent_end_replayed_with_same_run_id_is_ignored)
{
    /* Real time on the test clock: init (before the test host installs its
     * clock) forgets run ids older than a week of wall-clock time. */
    atomic_store(&H.now_ms, (int64_t)time(NULL) * 1000);
    join3(CH1, NULL);
    human_says(CH1, NULL, "thoughts?", NULL);
    ck_assert_int_eq(tth_resolve(&H, TTH_BRAVO, CH1, NULL), 1); /* swapped */
    ck_assert_int_eq(end_run(TTH_BRAVO, CH1, "NO_REPLY", "run-b1"), OC_OK);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "NO_REPLY"), 0); /* alpha passes */
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1); /* hand-off to bravo */

    ck_assert_int_eq(end_run(TTH_BRAVO, CH1, "NO_REPLY", "run-b1"), OC_OK);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1);
    tth_restart(&H);
    ck_assert_int_eq(end_run(TTH_BRAVO, CH1, "NO_REPLY", "run-b1"), OC_OK);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1);
    dg_turn_state st = peek(CH1, NULL, NULL);
    ck_assert_int_eq(st.handoff, 1);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);

    /* Another run of bravo is a new run: its pass counts. */
    ck_assert_int_eq(end_run(TTH_BRAVO, CH1, "NO_REPLY", "run-b2"), OC_OK);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 2);
    /* The same runId in another session is another run too: charlie's pass
     * ends the silent round. */
    ck_assert_int_eq(end_run(TTH_CHARLIE, CH1, "NO_REPLY", "run-b1"), OC_OK);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), -1);
}
END_TEST

START_TEST(test_tool_only_turn_keeps_channel_awake)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "please update the file", NULL);
    ck_assert_int_eq(tth_end(&H, TTH_ALPHA, CH1, NULL, "", 2), OC_OK); /* tools only */
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(run(TTH_CHARLIE, CH1, NULL, "NO_REPLY"), 0);
    dg_turn_state st = peek(CH1, NULL, NULL);
    ck_assert_int_eq(st.active, 1);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
}
END_TEST

START_TEST(test_decorated_no_reply_lets_channel_sleep)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "anything?", NULL);
    static const char *const answers[] = {"  **NO_REPLY**\n", "no_reply.\nNO_REPLY",
                                          "{\"action\":\"NO_REPLY\"}"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(tth_resolve(&H, ABC[i], CH1, NULL), 0); /* its turn, a real run */
        ck_assert_int_eq(tth_end(&H, ABC[i], CH1, NULL, answers[i], 0), OC_OK);
    }
    dg_turn_state st = peek(CH1, NULL, NULL);
    ck_assert_int_eq(st.active, 0);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), -1);
}
END_TEST

START_TEST(test_moderator_messages_never_wake)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "anything?", NULL);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(run(ABC[i], CH1, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(peek(CH1, NULL, NULL).active, 0);
    char id[24];
    const char *const mentions[] = {TTH_ALPHA_UID, NULL};
    ck_assert_int_eq(
        tth_msg(&H, CH1, NULL, mid(id), TTH_MOD_UID, 1, "[Discussion Idle] ...", mentions), OC_OK);
    ck_assert_int_eq(
        tth_msg(&H, CH1, NULL, mid(id), TTH_MOD_UID, 1, "<@" TTH_ALPHA_UID ">", mentions), OC_OK);
    dg_turn_state st = peek(CH1, NULL, NULL);
    ck_assert_int_eq(st.active, 0);
    ck_assert_int_eq(st.msg_seq, 1);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), -1);
}
END_TEST

START_TEST(test_busy_channel_caps_speaker_runs)
{
    join3(CH1, NULL);
    /* Twenty human messages arrive while alpha holds the turn; the host
     * queues one run per message per agent, one run at a time per session. */
    for (int i = 0; i < 20; i++)
        human_says(CH1, NULL, "busy", NULL);
    int real[3] = {0, 0, 0};
    for (int m = 0; m < 20; m++) {
        for (int a = 2; a >= 0; a--) { /* the speaker's run comes last */
            int swapped = tth_resolve(&H, ABC[a], CH1, NULL);
            ck_assert_int_ge(swapped, 0);
            if (!swapped)
                real[a]++;
            ck_assert_int_eq(tth_end(&H, ABC[a], CH1, NULL, "NO_REPLY", 0), OC_OK);
        }
    }
    /* One real completion per turn, not one per message: alpha, bravo and
     * charlie each pass once, then the channel sleeps. */
    ck_assert_int_eq(real[0], 1);
    ck_assert_int_eq(real[1], 1);
    ck_assert_int_eq(real[2], 1);
    ck_assert_int_eq(peek(CH1, NULL, NULL).active, 0);
    /* At most one hand-off pending at a time: two were posted in all. */
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 2);
}
END_TEST

/* ---- discussion channels --------------------------------------------------------- */

static int64_t open_discussion(const char *channel, const char *initiator,
                               const char *const *participants, size_t n)
{
    dg_plugin *p = tth_plugin(&H);
    char *order[8];
    order[0] = (char *)initiator;
    for (size_t i = 0; i < n; i++)
        order[i + 1] = (char *)participants[i];
    dg_discussion d = {
        .discussion_channel_id = (char *)channel,
        .origin_channel_id = ORIGIN,
        .initiator_agent_id = (char *)initiator,
        .initiator_session_key = "agent:x",
        .initiator_session_id = "sid",
        .initiator_workspace = "/tmp/ws",
        .discuss_guide = "Decide the release date.",
        .status = DG_DISCUSSION_ACTIVE,
        .created_at_ms = dg_now_ms(p),
        .turn_order = order,
        .n_turn_order = n + 1,
    };
    int64_t id = 0;
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_store_discussion_insert(p->store, &d, &id), OC_OK);
    ck_assert_int_eq(
        dg_turns_prefill_discussion(p->turns, channel, initiator, participants, n, dg_now_ms(p)),
        OC_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
    return id;
}

static void close_discussion(int64_t id, const char *channel)
{
    dg_plugin *p = tth_plugin(&H);
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_store_discussion_close(p->store, id, "plans/d.md", dg_now_ms(p)), OC_OK);
    ck_assert_int_eq(dg_turns_close_channel(p->turns, channel, dg_now_ms(p)), OC_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
}

static const char *const BC[] = {TTH_BRAVO, TTH_CHARLIE};

START_TEST(test_discussion_prefill_first_participant_speaks)
{
    open_discussion(CH2, TTH_ALPHA, BC, 2);
    dg_channel_mode mode;
    dg_turn_state st = peek(CH2, NULL, &mode);
    ck_assert_int_eq(mode, DG_MODE_DISCUSSION);
    ck_assert_int_eq(st.active, 1);
    /* The kickoff (a moderator message) wakes nobody by itself; the turn
     * is already with the first participant. */
    char id[24];
    ck_assert_int_eq(tth_msg(&H, CH2, NULL, mid(id), TTH_MOD_UID, 1, "[Discussion Started]", NULL),
                     OC_OK);
    ck_assert_int_eq(who_speaks(ABC, 3, CH2, NULL), 1);
    char agent[32];
    ck_assert_int_eq(dg_turns_member(tth_plugin(&H)->turns, CH2, 0, agent, sizeof agent), OC_OK);
    ck_assert_str_eq(agent, TTH_ALPHA);
}
END_TEST

/* A discussion opened or closed in another channel must not make the
 * engine forget the runs in flight here: bravo's swapped run ends after the
 * turn reached it, and its forced NO_REPLY is not bravo's pass. */
START_TEST(test_discussion_elsewhere_keeps_runs_in_flight)
{
    static const char *const EF[] = {"echo", "foxtrot"};
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(tth_resolve(&H, TTH_BRAVO, CH1, NULL), 1); /* swapped, still running */
    ck_assert_int_eq(tth_resolve(&H, TTH_CHARLIE, CH1, NULL), 1);
    int64_t id = open_discussion(CH2, TTH_DELTA, EF, 2);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "NO_REPLY"), 0); /* alpha passes */
    /* (peek, not a resolve: bravo's session has one run at a time) */
    ck_assert_int_eq(peek(CH1, NULL, NULL).speaker, 1);
    /* bravo's forced NO_REPLY: bravo keeps the turn and is woken. */
    ck_assert_int_eq(tth_end(&H, TTH_BRAVO, CH1, NULL, "NO_REPLY", 0), OC_OK);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);
    char *c = tth_outbox_content(&H, CH1, 0, NULL);
    ck_assert_str_eq(c, "<@" TTH_BRAVO_UID ">");
    free(c);
    /* The same when a discussion is closed meanwhile: charlie's swapped
     * run ends after bravo passed the turn to it. */
    close_discussion(id, CH2);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(peek(CH1, NULL, NULL).speaker, 2);
    ck_assert_int_eq(tth_end(&H, TTH_CHARLIE, CH1, NULL, "NO_REPLY", 0), OC_OK);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 2);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 2);
    /* The discussion channel itself is what changed there. */
    dg_channel_mode mode;
    peek(CH2, NULL, &mode);
    ck_assert_int_eq(mode, DG_MODE_CLOSED);
    ck_assert_int_eq(tth_resolve(&H, "echo", CH2, NULL), 1);
}
END_TEST

START_TEST(test_discussion_idle_reminder_once_per_idle_period)
{
    open_discussion(CH2, TTH_ALPHA, BC, 2);
    ck_assert_int_eq(run(TTH_BRAVO, CH2, NULL, "I think Friday."), 1);
    /* A silent round: charlie, alpha pass; bravo wrote the latest message,
     * so it is not asked about it: the round is over. */
    ck_assert_int_eq(run(TTH_CHARLIE, CH2, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH2, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(tth_outbox_count(&H, CH2), 1);
    char *text = tth_outbox_content(&H, CH2, 0, NULL);
    ck_assert_ptr_nonnull(strstr(text, "[Discussion Idle]"));
    ck_assert_ptr_nonnull(strstr(text, "<@" TTH_ALPHA_UID ">"));
    /* Where to write (discussion.summaryDir; no channel name was recorded
     * for this row, so its id stands in). */
    ck_assert_ptr_nonnull(strstr(text, "(plans/discussions/" CH2 ".md)"));
    free(text);
    /* The reminder makes the initiator the speaker. */
    char id[24];
    ck_assert_int_eq(tth_msg(&H, CH2, NULL, mid(id), TTH_MOD_UID, 1, "[Discussion Idle]", NULL),
                     OC_OK);
    ck_assert_int_eq(who_speaks(ABC, 3, CH2, NULL), 0);
    /* The initiator stays silent too: the channel rests, no new reminder. */
    ck_assert_int_eq(run(TTH_ALPHA, CH2, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(who_speaks(ABC, 3, CH2, NULL), -1);
    tth_advance(&H, 3600 * 1000);
    ck_assert_int_eq(who_speaks(ABC, 3, CH2, NULL), -1);
    ck_assert_int_eq(tth_outbox_count(&H, CH2), 1);
    /* A real message starts a new idle period: the next silent round gets
     * one more reminder. */
    human_says(CH2, NULL, "Any objections?", NULL);
    ck_assert_int_eq(run(TTH_ALPHA, CH2, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(run(TTH_BRAVO, CH2, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(run(TTH_CHARLIE, CH2, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(tth_outbox_count(&H, CH2), 2);
    text = tth_outbox_content(&H, CH2, 1, NULL);
    ck_assert_ptr_nonnull(strstr(text, "[Discussion Idle]"));
    free(text);
}
END_TEST

static int outbox_with(const char *channel, const char *needle);

/* The hook ctx of agent's session in channel, with runId. New reference. */
static json_t *run_ctx(const char *agent, const char *channel, const char *run_id)
{
    char key[256];
    return json_pack("{s:s, s:s, s:s, s:s, s:s}", "agentId", agent, "sessionKey",
                     tth_session_key(key, sizeof key, agent, channel, NULL), "channelId", channel,
                     "messageProvider", "discord", "runId", run_id);
}

/* A turn the budget allows is delivered: with discussionTurns 2, the
 * second turn's model reports its usage while it runs; that report does
 * not latch the breaker under the run (which would hand the initiator the
 * turn and cancel the answer it paid for). The run's end reaches the
 * limit: the initiator is asked to wrap up, and the answer goes out. */
START_TEST(test_discussion_turn_the_budget_allowed_is_delivered)
{
    tth_free(&H);
    tth_start(&H, "channel",
              "\"turn\":{\"maxAgentMessages\":1000},\"budget\":{\"discussionTurns\":2}");
    open_discussion(CH2, TTH_ALPHA, BC, 2);
    ck_assert_int_eq(run(TTH_BRAVO, CH2, NULL, "I think Friday."), 1); /* turn 1 */
    json_t *ctx = run_ctx(TTH_CHARLIE, CH2, "c2");
    json_t *ev = json_pack("{s:s}", "cleanedBody", "I think Friday.");
    json_t *r = NULL;
    ck_assert_int_eq(tth_call(&H, "before_agent_reply", ev, ctx, &r), OC_OK);
    ck_assert_ptr_null(r); /* turn 2: granted */
    json_decref(ev);
    ev = json_pack("{s:s, s:s, s:s, s:{s:i, s:i}}", "runId", "c2", "model", "m", "provider", "p",
                   "usage", "input", 900, "output", 100);
    ck_assert_int_eq(tth_call(&H, "llm_output", ev, ctx, NULL), OC_OK);
    json_decref(ev);
    json_decref(ctx);
    ck_assert_int_eq(end_run(TTH_CHARLIE, CH2, "Agreed, Friday.", "c2"), OC_OK);
    ck_assert_int_eq(tth_send(&H, TTH_CHARLIE, CH2, NULL, "Agreed, Friday."), 0);
    ck_assert_int_eq(outbox_with(CH2, "[Discussion Budget Reached]"), 1);
}
END_TEST

/* The moderator's idle reminder answers bot activity; it must not reset the
 * loop guard, or the initiator and the moderator can go on for ever with no
 * human around: silent round, reminder, the initiator says a little,
 * silent round, reminder, ... */
START_TEST(test_idle_reminders_do_not_feed_a_loop)
{
    tth_free(&H);
    tth_start(&H, "channel", "\"turn\":{\"maxAgentMessages\":6}");
    open_discussion(CH2, TTH_ALPHA, BC, 2);
    int cycles = 0, seen = 0;
    for (; cycles < 30; cycles++) {
        ck_assert_int_eq(run(TTH_BRAVO, CH2, NULL, "NO_REPLY"), 0);
        ck_assert_int_eq(run(TTH_CHARLIE, CH2, NULL, "NO_REPLY"), 0);
        /* The initiator is asked in the first round only: later it wrote
         * the latest message and is not asked to pass on it. */
        if (!peek(CH2, NULL, NULL).idle_reminded)
            ck_assert_int_eq(run(TTH_ALPHA, CH2, NULL, "NO_REPLY"), 0);
        /* The reminder (if any) comes back to the gateway. */
        int n = tth_outbox_count(&H, CH2), reminded = 0;
        for (; seen < n; seen++) {
            char *c = tth_outbox_content(&H, CH2, seen, NULL);
            reminded |= strstr(c, "[Discussion Idle]") != NULL;
            char id[24];
            ck_assert_int_eq(tth_msg(&H, CH2, NULL, mid(id), TTH_MOD_UID, 1, c, NULL), OC_OK);
            free(c);
        }
        if (!reminded || who_speaks(ABC, 3, CH2, NULL) != 0)
            break;
        /* The initiator answers the reminder with a few words, not the
         * callback; the round goes on. */
        ck_assert_int_eq(run(TTH_ALPHA, CH2, NULL, "Let us wait a little longer."), 1);
    }
    ck_assert_msg(cycles < 10, "still going after %d reminder cycles", cycles);
    ck_assert_int_eq(who_speaks(ABC, 3, CH2, NULL), -1);
    int rests = 0;
    for (int i = 0; i < tth_outbox_count(&H, CH2); i++) {
        char *c = tth_outbox_content(&H, CH2, i, NULL);
        rests += strstr(c, "paused") != NULL;
        free(c);
    }
    ck_assert_int_eq(rests, 1);
}
END_TEST

/* ---- discussion timers ----------------------------------------------------------- */

/* The outbox rows of channel containing needle. */
static int outbox_with(const char *channel, const char *needle)
{
    int k = 0;
    for (int i = 0; i < tth_outbox_count(&H, channel); i++) {
        char *c = tth_outbox_content(&H, channel, i, NULL);
        k += c && strstr(c, needle) != NULL;
        free(c);
    }
    return k;
}

static dg_discussion row_of(const char *channel)
{
    dg_plugin *p = tth_plugin(&H);
    dg_discussion d;
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_store_discussion_by_channel(p->store, channel, &d), OC_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
    return d;
}

/* The sweeper thread applies the timers too; a direct pass makes the test
 * independent of its timing (both are exactly-once through the store). */
static void sweep_now(void)
{
    dg_discuss_sweep(tth_plugin(&H));
}

START_TEST(test_discussion_quiet_reminder_once_per_quiet_period)
{
    tth_free(&H);
    tth_start(&H, "channel", "\"discussion\":{\"reminderAfterSec\":600}");
    open_discussion(CH2, TTH_ALPHA, BC, 2);
    ck_assert_int_eq(run(TTH_BRAVO, CH2, NULL, "I think Friday."), 1);
    tth_advance(&H, 599 * 1000);
    sweep_now();
    ck_assert_int_eq(outbox_with(CH2, "[Discussion Quiet]"), 0);
    tth_advance(&H, 2 * 1000);
    sweep_now();
    sweep_now();
    ck_assert_int_eq(outbox_with(CH2, "[Discussion Quiet]"), 1);
    ck_assert_int_eq(outbox_with(CH2, "<@" TTH_ALPHA_UID ">"), 1);
    ck_assert_int_eq(outbox_with(CH2, "(plans/discussions/" CH2 ".md)"), 1);
    /* The initiator has the turn. */
    ck_assert_int_eq(who_speaks(ABC, 3, CH2, NULL), 0);
    /* The moderator's own message does not start a new quiet period, and a
     * restart does not send it again. */
    char id[24];
    ck_assert_int_eq(tth_msg(&H, CH2, NULL, mid(id), TTH_MOD_UID, 1, "[Discussion Quiet]", NULL),
                     OC_OK);
    tth_restart(&H);
    tth_advance(&H, 3600 * 1000);
    sweep_now();
    ck_assert_int_eq(outbox_with(CH2, "[Discussion Quiet]"), 1);
    /* A human's word starts a new period: one more reminder after it. */
    human_says(CH2, NULL, "Any objections?", NULL);
    tth_advance(&H, 601 * 1000);
    sweep_now();
    sweep_now();
    ck_assert_int_eq(outbox_with(CH2, "[Discussion Quiet]"), 2);
    dg_discussion d = row_of(CH2);
    ck_assert_int_eq(d.status, DG_DISCUSSION_ACTIVE);
    dg_discussion_clear(&d);
}
END_TEST

START_TEST(test_discussion_quiet_reminder_off_with_zero)
{
    open_discussion(CH2, TTH_ALPHA, BC, 2); /* setup: reminderAfterSec 0 */
    tth_advance(&H, 30LL * 24 * 3600 * 1000);
    sweep_now();
    ck_assert_int_eq(tth_outbox_count(&H, CH2), 0);
    ck_assert_int_eq(tth_outbox_count(&H, ORIGIN), 0);
}
END_TEST

START_TEST(test_discussion_lifetime_wrapup_then_expiry)
{
    tth_free(&H);
    tth_start(&H, "channel",
              "\"discussion\":{\"reminderAfterSec\":0,\"maxLifetimeSec\":3600,"
              "\"archiveChannelId\":\"300000000000000099\"}");
    open_discussion(CH2, TTH_ALPHA, BC, 2);
    tth_advance(&H, 3599 * 1000);
    sweep_now();
    ck_assert_int_eq(tth_outbox_count(&H, CH2), 0);
    tth_advance(&H, 1000);
    sweep_now();
    sweep_now();
    ck_assert_int_eq(outbox_with(CH2, "[Discussion Time Is Up]"), 1);
    ck_assert_int_eq(who_speaks(ABC, 3, CH2, NULL), 0);
    dg_discussion d = row_of(CH2);
    ck_assert_int_eq(d.status, DG_DISCUSSION_ACTIVE);
    ck_assert_int_gt(d.wrapup_at_ms, 0);
    dg_discussion_clear(&d);
    /* Across a restart: not asked again, and the second period counts on. */
    tth_restart(&H);
    tth_advance(&H, 3599 * 1000);
    sweep_now();
    ck_assert_int_eq(outbox_with(CH2, "[Discussion Time Is Up]"), 1);
    d = row_of(CH2);
    ck_assert_int_eq(d.status, DG_DISCUSSION_ACTIVE);
    dg_discussion_clear(&d);
    tth_advance(&H, 1000);
    sweep_now();
    sweep_now();
    d = row_of(CH2);
    ck_assert_int_eq(d.status, DG_DISCUSSION_CLOSED);
    ck_assert_str_eq(d.end_status, "expired");
    ck_assert_ptr_null(d.summary_path);
    ck_assert_int_gt(d.completed_at_ms, 0);
    dg_discussion_clear(&d);
    /* The result went to the origin, once, saying so, with no summary path. */
    ck_assert_int_eq(tth_outbox_count(&H, ORIGIN), 1);
    char *text = tth_outbox_content(&H, ORIGIN, 0, NULL);
    ck_assert_ptr_nonnull(strstr(text, "[Discussion Result Ready]"));
    ck_assert_ptr_nonnull(strstr(text, "expired"));
    ck_assert_ptr_nonnull(strstr(text, "<@" TTH_ALPHA_UID ">"));
    ck_assert_ptr_null(strstr(text, ".md"));
    free(text);
    dg_channel_mode mode;
    peek(CH2, NULL, &mode);
    ck_assert_int_eq(mode, DG_MODE_CLOSED);
    tth_restart(&H);
    tth_advance(&H, 24 * 3600 * 1000LL);
    sweep_now();
    ck_assert_int_eq(tth_outbox_count(&H, ORIGIN), 1);
    ck_assert_int_eq(tth_outbox_count(&H, CH2), 1);
    /* One archive index line (discussion.archiveChannelId), once. */
    ck_assert_int_eq(tth_outbox_count(&H, "300000000000000099"), 1);
    ck_assert_int_eq(outbox_with("300000000000000099", CH2 " | initiator " TTH_ALPHA " | "), 1);
    ck_assert_int_eq(outbox_with("300000000000000099", "| <#" CH2 "> | expired | summary `none`"),
                     1);
}
END_TEST

/* Nothing but the background sweeper applies the reminder (no event). */
START_TEST(test_discussion_timers_run_in_the_background)
{
    tth_free(&H);
    tth_start(&H, "channel", "\"discussion\":{\"reminderAfterSec\":60}");
    open_discussion(CH2, TTH_ALPHA, BC, 2);
    tth_advance(&H, 61 * 1000);
    for (int i = 0; i < 1000 && tth_outbox_count(&H, CH2) == 0; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    ck_assert_int_eq(outbox_with(CH2, "[Discussion Quiet]"), 1);
}
END_TEST

START_TEST(test_closed_channel_overrides_cancels_and_never_wakes)
{
    int64_t id = open_discussion(CH2, TTH_ALPHA, BC, 2);
    join3(CH2, NULL);
    close_discussion(id, CH2);
    /* Every agent, speaker or not, known or never seen before, is swapped. */
    ck_assert_int_eq(tth_resolve(&H, TTH_BRAVO, CH2, NULL), 1);
    ck_assert_int_eq(tth_resolve(&H, TTH_DELTA, CH2, NULL), 1);
    /* A session first seen there also gets the persistent override. */
    ck_assert_int_ge(H.patches, 1);
    ck_assert_ptr_nonnull(strstr(H.last_patch, "=noreply/no-reply-1"));
    /* Agents' messages are cancelled. */
    ck_assert_int_eq(tth_send(&H, TTH_BRAVO, CH2, NULL, "one more thing"), 1);
    ck_assert_int_eq(tth_send(&H, TTH_ALPHA, CH2, NULL, "NO_REPLY"), 1);
    /* Nothing wakes a turn again. */
    human_says(CH2, NULL, "hello?", NULL);
    agent_posts(TTH_CHARLIE, CH2, NULL, "hi");
    ck_assert_int_eq(who_speaks(ABC, 3, CH2, NULL), -1);
    /* The other channels are untouched. */
    join3(CH1, NULL);
    human_says(CH1, NULL, "hello", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
}
END_TEST

static int closed_notices(const char *channel)
{
    int n = 0;
    for (int i = 0;; i++) {
        char *c = tth_outbox_content(&H, channel, i, NULL);
        if (!c)
            break;
        n += strstr(c, "[Channel Closed]") != NULL;
        free(c);
    }
    return n;
}

START_TEST(test_closed_notice_once_per_message)
{
    int64_t id = open_discussion(CH2, TTH_ALPHA, BC, 2);
    close_discussion(id, CH2);
    /* A burst of 20 messages, each reported by three accounts. */
    for (int i = 0; i < 20; i++) {
        char msg[24];
        mid(msg);
        for (int account = 0; account < 3; account++)
            ck_assert_int_eq(tth_msg(&H, CH2, NULL, msg, TTH_HUMAN_UID, 0, "late", NULL), OC_OK);
        tth_advance(&H, 10);
    }
    ck_assert_int_eq(closed_notices(CH2), 20);
    /* Moderator messages (the notices themselves) get none. */
    char msg[24];
    ck_assert_int_eq(tth_msg(&H, CH2, NULL, mid(msg), TTH_MOD_UID, 1, "[Channel Closed]", NULL),
                     OC_OK);
    ck_assert_int_eq(closed_notices(CH2), 20);
}
END_TEST

START_TEST(test_closed_notice_cooldown_per_channel)
{
    int64_t id = open_discussion(CH2, TTH_ALPHA, BC, 2);
    close_discussion(id, CH2);
    for (int i = 0; i < 20; i++) {
        human_says(CH2, NULL, "late", NULL);
        tth_advance(&H, 1000);
    }
    ck_assert_int_eq(closed_notices(CH2), 1); /* 20 s < 60 s window */
    tth_advance(&H, 60 * 1000);
    human_says(CH2, NULL, "still there?", NULL);
    ck_assert_int_eq(closed_notices(CH2), 2);
}
END_TEST

START_TEST(test_closed_notice_no_ping_pong_with_a_bot)
{
    int64_t id = open_discussion(CH2, TTH_ALPHA, BC, 2);
    close_discussion(id, CH2);
    /* A bot answers every notice; with no cooldown it still gets at most
     * one notice until a human speaks again. */
    char msg[24];
    ck_assert_int_eq(tth_msg(&H, CH2, NULL, mid(msg), TTH_BOT_UID, 1, "hello", NULL), OC_OK);
    for (int i = 0; i < 10; i++) {
        int before = tth_outbox_count(&H, CH2);
        char *last = tth_outbox_content(&H, CH2, before - 1, NULL);
        ck_assert_int_eq(tth_msg(&H, CH2, NULL, mid(msg), TTH_MOD_UID, 1, last, NULL), OC_OK);
        free(last);
        ck_assert_int_eq(tth_msg(&H, CH2, NULL, mid(msg), TTH_BOT_UID, 1, "re: closed?", NULL),
                         OC_OK);
        ck_assert_int_eq(tth_msg(&H, CH2, NULL, mid(msg), tth_uid(TTH_BRAVO), 1, "me too", NULL),
                         OC_OK);
    }
    ck_assert_int_eq(closed_notices(CH2), 1);
    human_says(CH2, NULL, "why is it closed?", NULL);
    ck_assert_int_eq(closed_notices(CH2), 2);
    ck_assert_int_eq(tth_msg(&H, CH2, NULL, mid(msg), TTH_BOT_UID, 1, "hm", NULL), OC_OK);
    ck_assert_int_eq(tth_msg(&H, CH2, NULL, mid(msg), TTH_BOT_UID, 1, "hm", NULL), OC_OK);
    ck_assert_int_eq(closed_notices(CH2), 3);
}
END_TEST

/* ---- state ownership, restart, concurrency ------------------------------------------ */

START_TEST(test_one_state_owner_across_sessions_and_restart)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "first"), 1);
    /* bravo's channel session and its thread session (another session key,
     * under channel policy the same scope) see one state. */
    ck_assert_int_eq(tth_resolve(&H, TTH_BRAVO, CH1, NULL), 0);
    ck_assert_int_eq(tth_resolve(&H, TTH_BRAVO, CH1, TH1), 0);
    ck_assert_int_eq(tth_resolve(&H, TTH_CHARLIE, CH1, TH1), 1);
    /* bravo finishes in its thread session: every session sees it. */
    ck_assert_int_eq(tth_end(&H, TTH_BRAVO, CH1, TH1, "second", 0), OC_OK);
    ck_assert_int_eq(tth_resolve(&H, TTH_BRAVO, CH1, NULL), 1);
    ck_assert_int_eq(tth_resolve(&H, TTH_CHARLIE, CH1, NULL), 0);
    /* The store is the owner: a new plugin instance has the same state. */
    dg_turn_state before = peek(CH1, NULL, NULL);
    tth_restart(&H);
    dg_turn_state after = peek(CH1, NULL, NULL);
    ck_assert(dg_turn_state_same(&before, &after));
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 2);
}
END_TEST

START_TEST(test_restart_mid_round_keeps_next_speaker)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "NO_REPLY"), 0); /* consumed, swapped */
    ck_assert_int_eq(run(TTH_CHARLIE, CH1, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "NO_REPLY"), 0); /* passes: hand-off */
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1);
    tth_restart(&H);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1);
    /* The pending hand-off survived too: bravo's pass hands on to charlie. */
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 2);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 2);
    tth_restart(&H);
    ck_assert_int_eq(run(TTH_CHARLIE, CH1, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), -1);
}
END_TEST

/* The state row round-trips every field (masks up to bit 63, "nobody"
 * positions, 64-bit times); an insert over an existing row is refused as
 * the bug it is, a save of a row said to exist writes it either way. */
START_TEST(test_state_row_round_trip)
{
    dg_store *st = tth_plugin(&H)->store;
    dg_scope sc;
    ck_assert_int_eq(dg_scope_thread(CH1, TH1, &sc), OC_OK);
    dg_turn_state a;
    dg_turn_state_init(&a);
    a.active = 1;
    a.speaker = 63;
    a.anchor = DG_NOBODY;
    a.silent = (uint64_t)1 << 63 | 5;
    a.mention = ~(uint64_t)0;
    a.mention_done = (uint64_t)1 << 62;
    a.consumed = 0x8000000000000001ull;
    a.owed = 2;
    a.agent_msgs = 99999;
    a.rested = 1;
    a.idle_reminded = 1;
    a.handoff = 7;
    a.permit = 3;
    a.permit_ms = 4102444800000LL;
    a.last_change_ms = 4102444800123LL;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_scope_save(st, &sc, TH1, &a, 0, 1), OC_OK);
    ck_assert_int_eq(dg_store_turns_scope_save(st, &sc, TH1, &a, 0, 2), OC_ERR_INTERNAL);
    dg_turn_state b;
    char *post = NULL;
    ck_assert_int_eq(dg_store_turns_scope_load(st, &sc, &b, &post), OC_OK);
    ck_assert(dg_turn_state_same(&a, &b));
    ck_assert_str_eq(post, TH1);
    free(post);
    a.speaker = 0;
    a.silent = 0;
    ck_assert_int_eq(dg_store_turns_scope_save(st, &sc, NULL, &a, 1, 3), OC_OK);
    ck_assert_int_eq(dg_store_turns_scope_load(st, &sc, &b, &post), OC_OK);
    ck_assert(dg_turn_state_same(&a, &b));
    ck_assert_ptr_null(post);
    /* Said to exist but missing (another scope): written all the same. */
    dg_scope other;
    ck_assert_int_eq(dg_scope_conversation(CH2, &other), OC_OK);
    ck_assert_int_eq(dg_store_turns_scope_save(st, &other, NULL, &a, 1, 4), OC_OK);
    ck_assert_int_eq(dg_store_turns_scope_load(st, &other, &b, NULL), OC_OK);
    ck_assert(dg_turn_state_same(&a, &b));
    long n = 0;
    ck_assert_int_eq(dg_store_turns_count(st, "scopes", &n), OC_OK);
    ck_assert_int_eq(n, 2);
    dg_store_rollback(st);
}
END_TEST

/* ---- a commit that fails --------------------------------------------------------- */

/* A reader (before_model_resolve of `agent`) run on its own thread while
 * the plugin is inside COMMIT; then the commit is made to fail. */
typedef struct commit_probe {
    const char *agent;
    int armed;
    pthread_t reader;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;        /* the reader returned */
    int verdict;     /* its tth_resolve result */
    int done_inside; /* it returned while the commit was in progress */
} commit_probe;

static void *probe_reader(void *arg)
{
    commit_probe *cp = arg;
    int v = tth_resolve(&H, cp->agent, CH1, NULL);
    pthread_mutex_lock(&cp->mu);
    cp->verdict = v;
    cp->done = 1;
    pthread_cond_broadcast(&cp->cv);
    pthread_mutex_unlock(&cp->mu);
    return NULL;
}

/* sqlite3 commit hook (the committing thread, store lock held): nonzero
 * turns the COMMIT into a rollback. */
static int failing_commit(void *arg)
{
    commit_probe *cp = arg;
    if (!cp->armed)
        return 0;
    cp->armed = 0;
    cp->started = pthread_create(&cp->reader, NULL, probe_reader, cp) == 0;
    /* Give the reader a generous second; a reader that waits for the
     * commit to end is what a correct plugin does. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    pthread_mutex_lock(&cp->mu);
    while (!cp->done && pthread_cond_timedwait(&cp->cv, &cp->mu, &until) == 0)
        ;
    cp->done_inside = cp->done;
    pthread_mutex_unlock(&cp->mu);
    return 1;
}

START_TEST(test_failed_commit_is_never_seen_and_leaves_the_turn)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    commit_probe cp = {.agent = TTH_BRAVO, .armed = 1, .verdict = -2};
    pthread_mutex_init(&cp.mu, NULL);
    pthread_cond_init(&cp.cv, NULL);
    dg_store *st = tth_plugin(&H)->store;
    dg_store_test_commit_hook(st, failing_commit, &cp);
    /* alpha's turn ends; the change that passes it to bravo never commits. */
    ck_assert_int_ne(tth_end(&H, TTH_ALPHA, CH1, NULL, "my answer", 0), OC_OK);
    dg_store_test_commit_hook(st, NULL, NULL);
    ck_assert(cp.started);
    pthread_join(cp.reader, NULL);
    /* Neither during the commit nor after it did bravo get a real run. */
    ck_assert_msg(cp.verdict == 1,
                  "bravo was given the turn by a change that never committed "
                  "(reader %s the commit)",
                  cp.done_inside ? "inside" : "after");
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    /* The engine carries on from the database: alpha's next end counts. */
    ck_assert_int_eq(tth_end(&H, TTH_ALPHA, CH1, NULL, "my answer", 0), OC_OK);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1);
    pthread_cond_destroy(&cp.cv);
    pthread_mutex_destroy(&cp.mu);
}
END_TEST

#define CONC_THREADS 8
#define CONC_TURNS 240

static const char *const EIGHT[CONC_THREADS] = {"alpha", "bravo",   "charlie", "delta",
                                                "echo",  "foxtrot", "golf",    "hotel"};
static _Atomic int conc_holder = -1;
static _Atomic int conc_turns = 0;
static _Atomic int conc_double = 0;
static _Atomic int conc_msg = 0;
static pthread_mutex_t conc_mu = PTHREAD_MUTEX_INITIALIZER;
static int conc_seq[CONC_TURNS + CONC_THREADS];
static int conc_n = 0;

static void *conc_worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    const char *agent = EIGHT[me];
    for (long spin = 0; spin < 2000000 && atomic_load(&conc_turns) < CONC_TURNS; spin++) {
        int swapped = tth_resolve(&H, agent, CH1, NULL);
        if (swapped < 0)
            atomic_fetch_add(&conc_double, 1000);
        if (swapped) {
            /* A swapped run ends silently: it must not move anything. */
            if (spin % 16 == 0)
                tth_end(&H, agent, CH1, NULL, "NO_REPLY", 0);
            continue;
        }
        int expected = -1;
        if (!atomic_compare_exchange_strong(&conc_holder, &expected, me)) {
            atomic_fetch_add(&conc_double, 1);
            continue;
        }
        pthread_mutex_lock(&conc_mu);
        conc_seq[conc_n++] = me;
        pthread_mutex_unlock(&conc_mu);
        int t = atomic_fetch_add(&conc_turns, 1);
        atomic_store(&conc_holder, -1);
        char id[24];
        snprintf(id, sizeof id, "5%017d", atomic_fetch_add(&conc_msg, 1));
        char text[32];
        snprintf(text, sizeof text, "turn %d", t);
        tth_end(&H, agent, CH1, NULL, text, 0);
        /* Its message, reported by two accounts at once with the others. */
        tth_msg(&H, CH1, NULL, id, tth_uid(agent), 1, text, NULL);
        tth_msg(&H, CH1, NULL, id, tth_uid(agent), 1, text, NULL);
    }
    return NULL;
}

START_TEST(test_concurrent_hooks_from_8_threads_keep_one_speaker)
{
    /* Every agent joins first, in a known order. */
    for (int i = 0; i < CONC_THREADS; i++)
        ck_assert_int_ge(tth_resolve(&H, EIGHT[i], CH1, NULL), 0);
    human_says(CH1, NULL, "go round", NULL);
    pthread_t th[CONC_THREADS];
    for (int i = 0; i < CONC_THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, conc_worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < CONC_THREADS; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(atomic_load(&conc_double), 0);
    ck_assert_int_ge(conc_n, CONC_TURNS);
    /* No lost or doubled advance: strict rotation in the join order. */
    for (int i = 0; i < conc_n; i++)
        ck_assert_msg(conc_seq[i] == i % CONC_THREADS, "turn %d went to %s, expected %s", i,
                      EIGHT[conc_seq[i]], EIGHT[i % CONC_THREADS]);
    dg_turn_state st = peek(CH1, NULL, NULL);
    ck_assert_int_eq(st.agent_msgs, conc_n); /* each message counted once */
    ck_assert_int_eq(st.msg_seq, conc_n + 1);
    ck_assert_int_eq(st.speaker, conc_n % CONC_THREADS);
    /* The mirror matches the database. */
    tth_restart(&H);
    dg_turn_state again = peek(CH1, NULL, NULL);
    ck_assert(dg_turn_state_same(&st, &again));
}
END_TEST

/* ---- hand-offs, the loop guard, session policies --------------------------------------- */

START_TEST(test_handoff_mentions_next_speaker_once)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "thoughts?", NULL);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "x"), 0); /* swapped: consumed */
    ck_assert_int_eq(run(TTH_CHARLIE, CH1, NULL, "x"), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);
    char *c = tth_outbox_content(&H, CH1, 0, NULL);
    ck_assert_str_eq(c, "<@" TTH_BRAVO_UID ">");
    free(c);
    /* The hand-off is a moderator message: no speech, no new cycle. */
    char id[24];
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, mid(id), TTH_MOD_UID, 1, "<@" TTH_BRAVO_UID ">", NULL),
                     OC_OK);
    dg_turn_state st = peek(CH1, NULL, NULL);
    ck_assert_int_eq(st.msg_seq, 1);
    ck_assert_uint_eq(st.silent, 1); /* alpha's pass still counts */
    ck_assert_int_eq(st.handoff, 1);
    /* Charlie's extra swapped run and a repeated resolve post nothing more. */
    ck_assert_int_eq(run(TTH_CHARLIE, CH1, NULL, "x"), 0);
    ck_assert_int_eq(tth_resolve(&H, TTH_BRAVO, CH1, NULL), 0);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);
    /* Bravo speaks: its own message wakes charlie, no hand-off needed. */
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "here is my view"), 1);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);
}
END_TEST

START_TEST(test_only_bare_mentions_are_handoffs)
{
    /* A moderator message of nothing but user mentions (with or without
     * '!', white space around) is a hand-off: it leaves the agents' message
     * count alone. Anything else the moderator says resets it. */
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "first view"), 1);
    ck_assert_int_eq(peek(CH1, NULL, NULL).agent_msgs, 1);
    /* Also as OpenClaw's Discord channel renders them (seen in the gateway
     * stage: "@reviewer" read as a moderator's text reset the count). */
    static const char *const handoffs[] = {" <@!" TTH_BRAVO_UID ">\n",
                                           "<@" TTH_BRAVO_UID ">"
                                           " <@" TTH_CHARLIE_UID ">",
                                           "@bravo", " @bravo <@" TTH_CHARLIE_UID ">",
                                           /* Slack's: an upper-case id, maybe with |name */
                                           "<@U0BRAVO2>", "<@U0BRAVO2|bravo> <@W0CHARLIE3>"};
    char id[24];
    for (size_t i = 0; i < 6; i++) {
        ck_assert_int_eq(tth_msg(&H, CH1, NULL, mid(id), TTH_MOD_UID, 1, handoffs[i], NULL), OC_OK);
        ck_assert_msg(peek(CH1, NULL, NULL).agent_msgs == 1, "%s", handoffs[i]);
    }
    static const char *const not_handoffs[] = {
        "<@x1>", "<@123", "<@!>", "<@1> thanks", "", "@", "@bravo thanks", "<@U0BRAVO2|bravo"};
    for (size_t i = 0; i < 8; i++) {
        int spk = who_speaks(ABC, 3, CH1, NULL);
        ck_assert_int_ge(spk, 0);
        ck_assert_int_eq(run(ABC[spk], CH1, NULL, "another view"), 1);
        ck_assert_int_gt(peek(CH1, NULL, NULL).agent_msgs, 0);
        ck_assert_int_eq(tth_msg(&H, CH1, NULL, mid(id), TTH_MOD_UID, 1, not_handoffs[i], NULL),
                         OC_OK);
        ck_assert_msg(peek(CH1, NULL, NULL).agent_msgs == 0, "\"%s\"", not_handoffs[i]);
    }
}
END_TEST

START_TEST(test_handoff_goes_to_the_discord_thread)
{
    join3(CH1, TH1);
    human_says(CH1, TH1, "thoughts?", NULL);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, TH1, "x"), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, TH1, "NO_REPLY"), 0);
    ck_assert_int_eq(tth_outbox_count(&H, TH1), 1);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 0);
}
END_TEST

START_TEST(test_loop_guard_rests_scope_and_says_so_once)
{
    tth_free(&H);
    tth_start(&H, "channel", "\"turn\":{\"maxAgentMessages\":6}");
    join3(CH1, NULL);
    human_says(CH1, NULL, "discuss among yourselves", NULL);
    int spoken = 0;
    for (int i = 0; i < 30; i++)
        spoken += run(ABC[i % 3], CH1, NULL, "and another thing");
    ck_assert_int_eq(spoken, 6);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), -1);
    int notes = 0;
    for (int i = 0; i < tth_outbox_count(&H, CH1); i++) {
        char *c = tth_outbox_content(&H, CH1, i, NULL);
        if (strstr(c, "paused")) {
            notes++;
            /* templates/rest.md with the configured limit */
            ck_assert_msg(strstr(c, "[Turn Manager]\n\n6 agent messages in a row without a "
                                    "human. This conversation is paused: the agents stay "
                                    "silent here until a human writes."),
                          "%s", c);
        }
        free(c);
    }
    ck_assert_int_eq(notes, 1);
    /* Bots ignoring the swap do not lift it, nor does the notice itself. */
    agent_posts(TTH_ALPHA, CH1, NULL, "hello?");
    char id[24];
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, mid(id), TTH_MOD_UID, 1, "[Turn Manager] paused", NULL),
                     OC_OK);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), -1);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);
    /* A human does. */
    human_says(CH1, NULL, "carry on", NULL);
    ck_assert_int_ge(who_speaks(ABC, 3, CH1, NULL), 0);
}
END_TEST

/* The notice is templates/rest.md: a templatesDir file replaces it. */
START_TEST(test_loop_guard_notice_from_templates_dir)
{
    tth_free(&H);
    char *tpl = tu_mkdtemp();
    char *file = tu_path(tpl, "rest.md");
    ck_assert_int_eq(tu_write_file(file, "Resting after {maxAgentMessages} bot messages.\n"), 0);
    char extra[512];
    snprintf(extra, sizeof extra, "\"turn\":{\"maxAgentMessages\":3},\"templatesDir\":\"%s\"", tpl);
    tth_start(&H, "channel", extra);
    join3(CH1, NULL);
    human_says(CH1, NULL, "discuss among yourselves", NULL);
    for (int i = 0; i < 12; i++)
        run(ABC[i % 3], CH1, NULL, "and another thing");
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), -1);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);
    char *c = tth_outbox_content(&H, CH1, 0, NULL);
    ck_assert_msg(strstr(c, "Resting after 3 bot messages.") && !strstr(c, "paused"), "%s", c);
    free(c);
    tu_rmtree(tpl);
    free(tpl);
    free(file);
}
END_TEST

START_TEST(test_blank_session_model_text_appends_nothing)
{
    /* The session-model text may be blank on purpose (templatesDir): then
     * nothing is appended to the prompt. */
    tth_free(&H);
    char *tpl = tu_mkdtemp();
    char *file = tu_path(tpl, "session_model_channel.md");
    ck_assert_int_eq(tu_write_file(file, "  \n\t\n"), 0);
    char extra[512];
    snprintf(extra, sizeof extra, "\"templatesDir\":\"%s\"", tpl);
    tth_start(&H, "channel", extra);
    join3(CH1, NULL);
    char *added = tth_prompt(&H, TTH_ALPHA, CH1, "You are alpha.");
    ck_assert_msg(added == NULL, "appended: %s", added);
    tu_rmtree(tpl);
    free(tpl);
    free(file);
}
END_TEST

START_TEST(test_loop_guard_counts_across_top_level_threads)
{
    tth_free(&H);
    tth_start(&H, "thread", "\"turn\":{\"maxAgentMessages\":4}");
    join3(CH1, NULL);
    human_says(CH1, NULL, "top-level question", NULL);
    int spoken = 0;
    for (int i = 0; i < 12; i++)
        spoken += run(ABC[i % 3], CH1, NULL, "top-level answer");
    ck_assert_int_eq(spoken, 4);
}
END_TEST

START_TEST(test_thread_policy_channel_session_follows_latest_top_level_thread)
{
    join3(CH1, NULL);
    char first[24];
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, mid(first), TTH_HUMAN_UID, 0, "q1", NULL), OC_OK);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "a1"), 1);
    /* alpha's top-level reply opened its own thread; the channel-level
     * sessions act there: bravo is next. */
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1);
    dg_turn_state st = peek(CH1, first, NULL);
    ck_assert_int_eq(st.msg_seq, 1);
    /* A session inside the Discord thread started from the first message
     * (same id) lands in the first thread's scope. */
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, first), 1);
}
END_TEST

START_TEST(test_timeout_moves_the_turn)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "x"), 0);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    tth_advance(&H, 59 * 1000);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    tth_advance(&H, 1000);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1); /* alpha lost the turn */
    ck_assert_int_eq(tth_send(&H, TTH_ALPHA, CH1, NULL, "late answer"), 1);
    /* alpha's late end moves nothing; it materialises the timeout, and
     * bravo (who consumed the message) is mentioned. */
    ck_assert_int_eq(tth_end(&H, TTH_ALPHA, CH1, NULL, "late answer", 0), OC_OK);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);
    tth_advance(&H, 2 * 60 * 1000);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), -1); /* everyone timed out */
}
END_TEST

/* Wait (real time, generous bound) until channel has n outbox rows. */
static int wait_outbox(const char *channel, int n)
{
    for (int i = 0; i < 200; i++) {
        if (tth_outbox_count(&H, channel) >= n)
            return 1;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* The speaker's run hangs and nothing else happens in the channel: the
 * turn still moves when the timeout is up, and the next speaker (who
 * already consumed the message) is woken -- also after a restart. */
static void speaker_hangs(int restart)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "x"), 0); /* swapped: consumed */
    ck_assert_int_eq(run(TTH_CHARLIE, CH1, NULL, "x"), 0);
    ck_assert_int_eq(tth_resolve(&H, TTH_ALPHA, CH1, NULL), 0); /* its run never ends */
    if (restart)
        tth_restart(&H);
    tth_advance(&H, 61 * 1000);
    ck_assert_msg(wait_outbox(CH1, 1), "nobody was woken after the speaker timed out");
    char *c = tth_outbox_content(&H, CH1, 0, NULL);
    ck_assert_str_eq(c, "<@" TTH_BRAVO_UID ">");
    free(c);
    dg_turn_state st = peek(CH1, NULL, NULL);
    ck_assert_int_eq(st.speaker, 1);
    ck_assert_int_eq(st.handoff, 1);
    /* Once posted, the hand-off is not repeated while it is pending. */
    struct timespec ts = {1, 500 * 1000000L};
    nanosleep(&ts, NULL);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);
}

START_TEST(test_hung_speaker_times_out_without_further_events)
{
    speaker_hangs(0);
}
END_TEST

START_TEST(test_hung_speaker_times_out_after_a_restart)
{
    speaker_hangs(1);
}
END_TEST

/* A host that runs every host call on one thread (the Node bridge) makes a
 * log call from another thread wait while that thread is busy inside a
 * synchronous call into the plugin. The turn sweeper logs the timeout while
 * it holds the store and the turn writer: if it called the host directly, a
 * synchronous ingest on the busy thread would wait for it, and it for that
 * thread. Its lines go through the log pump instead. */
START_TEST(test_plugin_threads_never_wait_on_a_busy_host_thread)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "x"), 0);
    ck_assert_int_eq(run(TTH_CHARLIE, CH1, NULL, "x"), 0);
    ck_assert_int_eq(tth_resolve(&H, TTH_ALPHA, CH1, NULL), 0); /* its run never ends */
    tth_relay_begin(&H);
    tth_advance(&H, 61 * 1000);
    /* The sweeper applies the timeout (at most a second or two). */
    for (int i = 0; i < 300 && peek(CH1, NULL, NULL).speaker == 0; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    /* The busy thread ingests a message: it needs the turn writer. */
    human_says(CH1, NULL, "still there?", NULL);
    ck_assert_int_eq(tth_relay_end(&H), 0);
    ck_assert(tth_log_has(&H, "did not finish within turn.timeoutSec"));
}
END_TEST

/* The first message of a channel comes before any agent's run: an agent a
 * human asks by name takes the turn although it was never seen there. */
START_TEST(test_first_message_mentions_an_unseen_agent)
{
    const char *const mention_c[] = {TTH_CHARLIE_UID, NULL};
    human_says(CH1, NULL, "@charlie a first question", mention_c);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 2);
}
END_TEST

/* A host never runs an agent for its own message: when the turn comes back
 * to the author of the latest message with nothing new said, the author
 * must be woken like any agent that already saw it (seen in a real gateway:
 * the discussion waited for ever on the coder after the others passed). */
START_TEST(test_author_of_the_latest_message_is_woken_when_the_turn_returns)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "my idea"), 1);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(run(TTH_CHARLIE, CH1, NULL, "NO_REPLY"), 0);
    dg_turn_state st = peek(CH1, NULL, NULL);
    if (st.active) {
        /* The turn is alpha's again: alpha is mentioned, not waited for. */
        ck_assert_int_eq(st.speaker, 0);
        ck_assert_msg(wait_outbox(CH1, 1), "alpha was never woken");
        char *c = tth_outbox_content(&H, CH1, tth_outbox_count(&H, CH1) - 1, NULL);
        ck_assert_str_eq(c, "<@" TTH_ALPHA_UID ">");
        free(c);
    }
}
END_TEST

/* OpenClaw's Discord channel renders <@id> as "@<display name>" before
 * message_received: the plugin learns the agents' names from Discord (the
 * sweeper thread, GET /users/{id}) and honours such a mention too. */
START_TEST(test_human_mention_rendered_as_text_picks_the_agent)
{
    fake_discord *fd = NULL;
    char err[256];
    ck_assert_msg(fake_discord_start(NULL, &fd, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(fake_discord_add_user(fd, "MODTOKEN.fake.names", TTH_MOD_UID, "moderator", 1),
                     0);
    ck_assert_int_eq(fake_discord_add_user(fd, "tok.alpha", TTH_ALPHA_UID, "Alpha Bot", 1), 0);
    ck_assert_int_eq(fake_discord_add_user(fd, "tok.charlie", TTH_CHARLIE_UID, "charlie", 1), 0);
    char extra[512];
    snprintf(extra, sizeof extra,
             "\"discord\":{\"apiBase\":\"%s\",\"guildId\":\"%s\",\"moderatorToken\":"
             "\"MODTOKEN.fake.names\",\"moderatorUserId\":\"" TTH_MOD_UID "\"}",
             fake_discord_url(fd), fake_discord_guild_id(fd));
    tth_free(&H);
    tth_start(&H, "channel", extra);
    join3(CH1, NULL); /* a first hook call: the plugin's log pump starts */
    /* The sweeper looks the names up a second after start (tth_log_has
     * waits for a line up to 5 s). */
    ck_assert_msg(tth_log_has(&H, "agent charlie is mentioned in text as @charlie"), "%s", H.log);
    ck_assert(tth_log_has(&H, "agent alpha is mentioned in text as @Alpha Bot"));
    /* An agent Discord does not know is reported once, by name. */
    ck_assert(tth_log_has(&H, "could not look up the Discord names of agent bravo"));
    /* Not a mention: inside a word, or a longer name. */
    human_says(CH1, NULL, "mail me at ops@charlie or ask @charlies", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "NO_REPLY"), 0);
    human_says(CH1, NULL, "@charlie what do you think?", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 2);
    ck_assert_int_eq(run(TTH_CHARLIE, CH1, NULL, "I think so"), 1);
    /* A name with a space, followed by punctuation. */
    human_says(CH1, NULL, "and @Alpha Bot, you?", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "NO_REPLY"), 0);
    /* In code Discord pings nobody: no mention either (the rotation goes
     * on: bravo; then, after a plain message for charlie, alpha). */
    human_says(CH1, NULL, "like this:\n```\n@charlie what now?\n```\nok?", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "NO_REPLY"), 0);
    human_says(CH1, NULL, "next", NULL);
    ck_assert_int_eq(run(TTH_CHARLIE, CH1, NULL, "NO_REPLY"), 0);
    human_says(CH1, NULL, "type `@charlie` to ask it", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "NO_REPLY"), 0);
    human_says(CH1, NULL, "```\n@charlie\n``` and @charlie `x`", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 2); /* outside code: a mention */
    tth_free(&H);
    fake_discord_stop(fd);
    tth_start(&H, "channel", NULL);
}
END_TEST

/* A turn script in CH1, played after alpha, bravo and charlie joined: each
 * step is a human's message (by HUMAN, with the mentions the host lists)
 * or an agent's run answering with text (ran: 1 when it spoke, 0 when it
 * passed or was claimed), then the agent that must hold the turn (an index
 * of ABC; ANYONE: not checked). A failure names the step. */
#define HUMAN NULL
#define ANYONE (-2)
typedef struct turn_step {
    const char *agent;
    const char *text;
    const char *const *mentions;
    int ran;
    int then;
} turn_step;

static void play(const turn_step *steps, size_t n)
{
    join3(CH1, NULL);
    for (size_t i = 0; i < n; i++) {
        const turn_step *st = &steps[i];
        if (st->agent == HUMAN) {
            human_says(CH1, NULL, st->text, st->mentions);
        } else {
            int ran = run(st->agent, CH1, NULL, st->text);
            ck_assert_msg(ran == st->ran, "step %zu: run of %s answering \"%s\" %s", i, st->agent,
                          st->text, ran ? "spoke" : "did not speak");
        }
        if (st->then != ANYONE) {
            int who = who_speaks(ABC, 3, CH1, NULL);
            ck_assert_msg(who == st->then, "step %zu (%s: \"%s\"): the turn is %s's, not %s's", i,
                          st->agent ? st->agent : "human", st->text, who >= 0 ? ABC[who] : "nobody",
                          ABC[st->then]);
        }
    }
}

static const char *const mention_c[] = {TTH_CHARLIE_UID, NULL};

/* A "<@id>" written only inside code pings nobody on Discord; a host that
 * reads mentions off the text (the bridge) still lists it: no mention.
 * Outside code as well it is a mention; not in the text at all (a reply's
 * ping, a host rendering names), the host's word stands. */
static const turn_step mention_inside_code[] = {
    {HUMAN, "write `<@" TTH_CHARLIE_UID ">` to ask charlie", mention_c, 0, 0},
    {TTH_ALPHA, "NO_REPLY", NULL, 0, ANYONE},
    {HUMAN, "```\n<@!" TTH_CHARLIE_UID "> hi\n```", mention_c, 0, 1},
    {TTH_BRAVO, "NO_REPLY", NULL, 0, ANYONE},
    {HUMAN, "`<@" TTH_CHARLIE_UID ">` means <@" TTH_CHARLIE_UID ">", mention_c, 0, 2},
    {TTH_CHARLIE, "NO_REPLY", NULL, 0, ANYONE},
    {HUMAN, "`code` and a question", mention_c, 0, 2},
};

START_TEST(test_mention_inside_code_is_no_mention)
{
    play(mention_inside_code, sizeof mention_inside_code / sizeof *mention_inside_code);
}
END_TEST

/* A human's mention gives the named agents the next turns, in the order of
 * the rotation; then the normal rotation resumes after the last of them. */
static const char *const mention_ab[] = {TTH_BRAVO_UID, TTH_ALPHA_UID, NULL};
static const turn_step mention_limits_turns[] = {
    {HUMAN, "@charlie what do you think?", mention_c, 0, 2},
    {TTH_CHARLIE, "I think so", NULL, 1, 0},
    {HUMAN, "@bravo @alpha and you?", mention_ab, 0, 0},
    {TTH_ALPHA, "yes", NULL, 1, 1},
    {TTH_BRAVO, "NO_REPLY", NULL, 0, 2},
};

START_TEST(test_human_mention_limits_turns)
{
    play(mention_limits_turns, sizeof mention_limits_turns / sizeof *mention_limits_turns);
}
END_TEST

/* An agent that speaks after the others passed starts a new cycle with its
 * message: the turn goes to the agent after it, as when its message
 * arrives first -- not back to itself. Its author is never handed the turn
 * to pass on its own message: once the others passed, the round ends. */
START_TEST(test_speaking_after_passes_hands_on_to_the_next)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "NO_REPLY"), 0);
    /* agent_end first, the message after it (the usual order). */
    ck_assert_int_eq(run(TTH_CHARLIE, CH1, NULL, "after all"), 1);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "NO_REPLY"), 0);
    /* charlie wrote the latest message: no hand-off, the round ends. */
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), -1);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 0);
    /* The same with the message first (a streaming host). */
    human_says(CH1, NULL, "again", NULL);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "NO_REPLY"), 0);
    agent_posts(TTH_CHARLIE, CH1, NULL, "streamed");
    ck_assert_int_eq(tth_end(&H, TTH_CHARLIE, CH1, NULL, "streamed", 0), OC_OK);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), -1);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 0);
}
END_TEST

START_TEST(test_human_message_resets_cycle_and_counter)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "one"), 1);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "NO_REPLY"), 0);
    dg_turn_state st = peek(CH1, NULL, NULL);
    ck_assert_uint_ne(st.silent, 0);
    ck_assert_int_eq(st.agent_msgs, 1);
    human_says(CH1, NULL, "bravo, really nothing?", NULL);
    st = peek(CH1, NULL, NULL);
    ck_assert_uint_eq(st.silent, 0);
    ck_assert_int_eq(st.agent_msgs, 0);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 2); /* the current speaker keeps it */
}
END_TEST

START_TEST(test_unmanaged_channel_and_unknown_agents_get_nothing)
{
    /* One agent alone is not managed. */
    human_says(CH1, NULL, "hi", NULL);
    ck_assert_int_eq(tth_resolve(&H, TTH_ALPHA, CH1, NULL), 0);
    ck_assert_int_eq(tth_send(&H, TTH_ALPHA, CH1, NULL, "hello"), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "hello"), 1);
    ck_assert_int_eq(tth_resolve(&H, TTH_ALPHA, CH1, NULL), 0);
    /* A second agent joins: it, not the one that just spoke, is next. */
    ck_assert_int_eq(tth_resolve(&H, TTH_BRAVO, CH1, NULL), 0);
    ck_assert_int_eq(tth_resolve(&H, TTH_ALPHA, CH1, NULL), 1);
    /* An agent not in `agents` is never swapped nor cancelled. */
    ck_assert_int_eq(tth_resolve(&H, "stranger", CH1, NULL), 0);
    ck_assert_int_eq(tth_send(&H, "stranger", CH1, NULL, "hey"), 0);
    ck_assert_int_eq(tth_end(&H, "stranger", CH1, NULL, "hey", 0), OC_OK);
    /* A context without a channel is none of our business. */
    json_t *ctx = json_pack("{s:s, s:s}", "agentId", TTH_ALPHA, "sessionKey", "agent:alpha:main");
    json_t *r = NULL;
    ck_assert_int_eq(tth_call(&H, "before_model_resolve", EMPTY, ctx, &r), OC_OK);
    ck_assert_ptr_null(r);
    json_decref(ctx);
}
END_TEST

START_TEST(test_message_sending_cancels_non_speaker)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(tth_send(&H, TTH_BRAVO, CH1, NULL, "me first!"), 1);
    /* bravo's run was swapped (join3 resolved it): even its NO_REPLY is
     * cancelled, like any text of a swapped run. */
    ck_assert_int_eq(tth_send(&H, TTH_BRAVO, CH1, NULL, "NO_REPLY"), 1);
    ck_assert_int_eq(tth_send(&H, TTH_ALPHA, CH1, NULL, "my turn"), 0);
    /* Dormant: nobody may send. */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(run(ABC[i], CH1, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(tth_send(&H, TTH_ALPHA, CH1, NULL, "still here"), 1);
    ck_assert(tth_log_has(&H, "message_sending: cancelled for alpha"));
}
END_TEST

/* Under the thread policy every thread is a scope of its own: finished
 * ones must not pile up for ever, neither in the database nor in memory. */
static void thirty_finished_threads(void)
{
    join3(CH1, NULL);
    for (int i = 0; i < 30; i++) {
        char th[24];
        snprintf(th, sizeof th, "32%016d", i);
        human_says(CH1, th, "a question in its own thread", NULL);
        for (int a = 0; a < 3; a++)
            ck_assert_int_eq(run(ABC[a], CH1, th, "NO_REPLY"), 0);
        ck_assert_int_eq(peek(CH1, th, NULL).active, 0);
    }
}

START_TEST(test_old_finished_threads_leave_the_database)
{
    thirty_finished_threads();
    dg_plugin *p = tth_plugin(&H);
    long n = 0;
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_store_turns_count(p->store, "scopes", &n), OC_OK);
    dg_store_rollback(p->store);
    ck_assert_int_ge(n, 30);
    /* A restart forgets dormant threads older than the dedup window (the
     * test clock stands in 1970, far behind the wall clock init prunes by). */
    tth_restart(&H);
    p = tth_plugin(&H);
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_store_turns_count(p->store, "scopes", &n), OC_OK);
    dg_store_rollback(p->store);
    ck_assert_int_eq(n, 0);
    /* A late reply in one of them starts it afresh. */
    human_says(CH1, "320000000000000007", "one more thing", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, "320000000000000007"), 0);
}
END_TEST

START_TEST(test_idle_threads_leave_the_memory)
{
    thirty_finished_threads();
    size_t scopes = 0, sessions = 0;
    ck_assert_int_eq(dg_turns_mirror_count(tth_plugin(&H)->turns, &scopes, &sessions), OC_OK);
    ck_assert_int_ge(scopes, 30);
    ck_assert_int_ge(sessions, 90);
    tth_advance(&H, 2 * 3600 * 1000LL);
    int shrunk = 0;
    for (int i = 0; i < 200 && !shrunk; i++) {
        ck_assert_int_eq(dg_turns_mirror_count(tth_plugin(&H)->turns, &scopes, &sessions), OC_OK);
        shrunk = scopes < 5 && sessions < 10;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    ck_assert_msg(shrunk, "still %zu scopes and %zu sessions in memory", scopes, sessions);
    /* Evicted records come back from the database when needed. */
    human_says(CH1, "320000000000000003", "back to this one", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, "320000000000000003"), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, "320000000000000003", "sure"), 1);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, "320000000000000003"), 1);
}
END_TEST

/* A burst of top-level messages (each its own thread scope
 * under the thread policy) must not grow the mirror for an hour: past the
 * bound the least recently changed dormant scopes leave at once. */
START_TEST(test_dormant_threads_bounded_by_count)
{
    dg_turns_set_dormant_max(tth_plugin(&H)->turns, 8);
    thirty_finished_threads();
    size_t scopes = 0, sessions = 0;
    ck_assert_int_eq(dg_turns_mirror_count(tth_plugin(&H)->turns, &scopes, &sessions), OC_OK);
    /* At most the bound plus the quarter that may gather before the next
     * trim, plus the channel's own scope. */
    ck_assert_msg(scopes <= 8 + 2 + 1, "%zu scopes in memory with a bound of 8", scopes);
    ck_assert_msg(sessions <= 3 * (8 + 2 + 1), "%zu sessions in memory", sessions);
    /* The oldest left; it comes back from the database when needed. */
    human_says(CH1, "320000000000000000", "back to the first one", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, "320000000000000000"), 0);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, "320000000000000000", "sure"), 1);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, "320000000000000000"), 1);
}
END_TEST

START_TEST(test_session_key_supplies_missing_context)
{
    join3(CH1, TH1);
    human_says(CH1, TH1, "go", NULL);
    /* No channelId/threadId in ctx: taken from the OpenClaw session key. */
    json_t *ctx =
        json_pack("{s:s}", "sessionKey", "agent:bravo:discord:channel:" CH1 ":thread:" TH1);
    json_t *r = NULL;
    ck_assert_int_eq(tth_call(&H, "before_model_resolve", EMPTY, ctx, &r), OC_OK);
    ck_assert_ptr_nonnull(r);
    json_decref(r);
    json_decref(ctx);
}
END_TEST

/* A message without a channel id delivered to one agent (ctx names its
 * session, but no channelId): refused as any message without one, not
 * compared with a NULL channel (fuzz-ci found strcmp on NULL there). */
START_TEST(test_agent_delivery_without_channel_refused)
{
    json_t *ev = json_pack("{s:s, s:s, s:s}", "messageId", "400000000000000001", "senderId",
                           TTH_HUMAN_UID, "content", "x");
    json_t *ctx = json_pack("{s:s, s:s}", "agentId", TTH_ALPHA, "sessionKey",
                            "agent:alpha:discord:channel:" CH1);
    ck_assert_int_eq(tth_call(&H, "message_received", ev, ctx, NULL), OC_ERR_INVALID);
    ck_assert(tth_log_has(&H, "event.channelId is missing"));
    json_decref(ev);
    json_decref(ctx);
}
END_TEST

START_TEST(test_malformed_event_refused_with_reason)
{
    json_t *ev = json_pack("{s:s, s:s}", "messageId", "400000000000000001", "content", "x");
    json_t *ctx = json_object();
    ck_assert_int_eq(tth_call(&H, "message_received", ev, ctx, NULL), OC_ERR_INVALID);
    ck_assert(tth_log_has(&H, "event.channelId is missing"));
    json_object_set_new(ev, "channelId", json_string(CH1));
    ck_assert_int_eq(tth_call(&H, "message_received", ev, ctx, NULL), OC_ERR_INVALID);
    ck_assert(tth_log_has(&H, "event.senderId is missing"));
    json_object_set_new(ev, "senderId", json_string(TTH_HUMAN_UID));
    json_object_set_new(ev, "messageId", json_string("~conv"));
    ck_assert_int_eq(tth_call(&H, "message_received", ev, ctx, NULL), OC_ERR_INVALID);
    ck_assert(tth_log_has(&H, "is not a message id"));
    json_decref(ev);
    json_decref(ctx);
}
END_TEST

START_TEST(test_non_discord_channel_still_takes_turns)
{
    /* A relay whose ids are neither platform's: hand-offs cannot be posted,
     * turns move all the same. */
    const char *ch = "general";
    join3(ch, NULL);
    human_says(ch, NULL, "hi all", NULL);
    ck_assert_int_eq(run(TTH_BRAVO, ch, NULL, "x"), 0);
    ck_assert_int_eq(run(TTH_ALPHA, ch, NULL, "NO_REPLY"), 0); /* hand-off owed to bravo */
    ck_assert_int_eq(who_speaks(ABC, 3, ch, NULL), 1);
    /* No platform, so no user id to mention: nothing is queued. */
    ck_assert_int_eq(tth_outbox_count(&H, NULL), 0);
}
END_TEST

/* ---- malformed hook events: a clear log line, nothing changes ------------------ */

/* A well-formed message_received event (new reference) to spoil. */
static json_t *msg_event(const char *channel, const char *msg_id, const char *sender, int bot,
                         const char *content)
{
    return json_pack("{s:s, s:s, s:b, s:s, s:b, s:s, s:[]}", "messageId", msg_id, "channelId",
                     channel, "isDm", 0, "senderId", sender, "senderIsBot", bot, "content", content,
                     "mentions");
}

/* message_received with ev (stolen) in channel; returns the hook status. */
static int deliver(json_t *ev, const char *channel)
{
    json_t *ctx = json_pack("{s:s}", "channelId", channel);
    int rc = tth_call(&H, "message_received", ev, ctx, NULL);
    json_decref(ev);
    json_decref(ctx);
    return rc;
}

START_TEST(test_malformed_message_fields_are_refused_and_change_nothing)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    dg_turn_state before = peek(CH1, NULL, NULL);
    struct {
        const char *key;
        json_t *value;      /* stolen */
        const char *logged; /* what the warning must name */
    } bad[] = {
        {"messageId", json_integer(400000000000000777LL), "event.messageId"},
        {"messageId", json_string(""), "event.messageId"},
        {"channelId", json_integer(300000000000000001LL), "event.channelId"},
        {"threadId", json_integer(310000000000000001LL), "event.threadId"},
        {"threadId", json_string("310000000000000001:x"), "event.threadId"},
        {"senderId", json_integer(200000000000000001LL), "event.senderId"},
        {"isDm", json_string("false"), "event.isDm"},
        {"senderIsBot", json_integer(1), "event.senderIsBot"},
        {"content", json_integer(42), "event.content"},
        {"mentions", json_string(TTH_ALPHA_UID), "event.mentions"},
        {"mentions", json_pack("[i]", 7), "event.mentions"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char id[24];
        /* An agent message would move the turn (alpha holds it): refused,
         * it must not. */
        json_t *ev = msg_event(CH1, mid(id), TTH_ALPHA_UID, 1, "done");
        json_object_set_new(ev, bad[i].key, bad[i].value);
        ck_assert_msg(deliver(ev, CH1) == OC_ERR_INVALID, "%s accepted", bad[i].logged);
        ck_assert_msg(tth_log_has(&H, bad[i].logged), "no log line names %s", bad[i].logged);
        dg_turn_state now = peek(CH1, NULL, NULL);
        ck_assert_msg(dg_turn_state_same(&before, &now) && now.msg_seq == before.msg_seq,
                      "a message with a bad %s changed the turn state", bad[i].logged);
    }
    /* A thread id longer than any id is refused by name too. */
    char big[300];
    memset(big, '3', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char id[24];
    json_t *ev = msg_event(CH1, mid(id), TTH_HUMAN_UID, 0, "hi");
    json_object_set_new(ev, "threadId", json_string(big));
    ck_assert_int_eq(deliver(ev, CH1), OC_ERR_INVALID);
    ck_assert(tth_log_has(&H, "event.threadId is not a thread id"));
    /* An event that is not an object at all. */
    json_t *arr = json_array();
    ck_assert_int_eq(deliver(arr, CH1), OC_ERR_INVALID);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    ck_assert_int_eq(peek(CH1, NULL, NULL).msg_seq, before.msg_seq);
}
END_TEST

START_TEST(test_huge_content_and_ids_reused_across_channels)
{
    join3(CH1, NULL);
    join3(CH2, NULL);
    /* A megabyte of content is ingested like any message, once. */
    size_t n = 1 << 20;
    char *big = malloc(n + 1);
    memset(big, 'x', n);
    big[n] = '\0';
    for (int account = 0; account < 2; account++)
        ck_assert_int_eq(deliver(msg_event(CH1, "400000000000000600", TTH_HUMAN_UID, 0, big), CH1),
                         OC_OK);
    free(big);
    ck_assert_int_eq(peek(CH1, NULL, NULL).msg_seq, 1);
    /* The same message id in another channel is another message there
     * (dedup is per channel and message id), and changes nothing here. */
    ck_assert_int_eq(deliver(msg_event(CH2, "400000000000000600", TTH_HUMAN_UID, 0, "hi"), CH2),
                     OC_OK);
    ck_assert_int_eq(peek(CH2, NULL, NULL).msg_seq, 1);
    ck_assert_int_eq(peek(CH2, NULL, NULL).active, 1);
    ck_assert_int_eq(peek(CH1, NULL, NULL).msg_seq, 1);
}
END_TEST

/* agent_end of the speaker with a spoiled event must not pass its turn. */
START_TEST(test_malformed_agent_end_is_refused_and_changes_nothing)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    char key[256];
    json_t *ctx =
        json_pack("{s:s, s:s, s:s}", "agentId", TTH_ALPHA, "sessionKey",
                  tth_session_key(key, sizeof key, TTH_ALPHA, CH1, NULL), "channelId", CH1);
    json_t *events[] = {
        json_null(),
        json_string("NO_REPLY"),
        json_pack("{s:s, s:b, s:i}", "runId", "r-1", "success", 1, "toolCalls", 0),
        json_pack("{s:s, s:b, s:i, s:i}", "runId", "r-2", "success", 1, "output", 0, "toolCalls",
                  0),
        json_pack("{s:s, s:b, s:s, s:s}", "runId", "r-3", "success", 1, "output", "", "toolCalls",
                  "2"),
        json_pack("{s:s, s:b, s:s}", "runId", "r-4", "success", 1, "output", ""),
        json_pack("{s:i, s:b, s:s, s:i}", "runId", 5, "success", 1, "output", "NO_REPLY",
                  "toolCalls", 0),
        json_pack("{s:s, s:s, s:s, s:i}", "runId", "r-6", "success", "yes", "output", "NO_REPLY",
                  "toolCalls", 0),
        json_pack("{s:s, s:b, s:s, s:i}", "runId", "r-7", "success", 1, "output", "NO_REPLY",
                  "toolCalls", -1),
    };
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
        ck_assert_msg(tth_call(&H, "agent_end", events[i], ctx, NULL) == OC_ERR_INVALID,
                      "agent_end event %zu accepted", i);
        ck_assert_msg(who_speaks(ABC, 3, CH1, NULL) == 0, "agent_end event %zu moved the turn", i);
        json_decref(events[i]);
    }
    ck_assert(tth_log_has(&H, "agent_end: event.output"));
    ck_assert(tth_log_has(&H, "agent_end: event.toolCalls"));
    ck_assert(tth_log_has(&H, "agent_end: event.runId"));
    ck_assert(tth_log_has(&H, "agent_end: event.success"));
    /* A context whose ids have the wrong type is refused by name as well. */
    json_t *bad_ctx = json_pack("{s:s, s:s, s:i}", "agentId", TTH_ALPHA, "sessionKey",
                                "agent:alpha:discord:channel:" CH1, "channelId", 3);
    json_t *ev = json_pack("{s:s, s:b, s:s, s:i}", "runId", "r-8", "success", 1, "output",
                           "NO_REPLY", "toolCalls", 0);
    ck_assert_int_eq(tth_call(&H, "agent_end", ev, bad_ctx, NULL), OC_ERR_INVALID);
    ck_assert(tth_log_has(&H, "ctx.channelId"));
    json_t *r = NULL;
    ck_assert_int_eq(tth_call(&H, "before_model_resolve", EMPTY, bad_ctx, &r), OC_ERR_INVALID);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    /* The same run, well formed, passes. */
    ck_assert_int_eq(tth_call(&H, "agent_end", ev, ctx, NULL), OC_OK);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1);
    json_decref(ev);
    json_decref(bad_ctx);
    json_decref(ctx);
}
END_TEST

static void session_text_once(const char *want, const char *not_want)
{
    char *text = tth_prompt(&H, TTH_ALPHA, CH1, "You are alpha.");
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(strstr(text, want));
    ck_assert_ptr_null(strstr(text, not_want));
    /* A system prompt that already carries it gets nothing more. */
    char *sys = NULL;
    ck_assert_int_ge(asprintf(&sys, "You are alpha.\n\n%s\n", text), 0);
    ck_assert_ptr_null(tth_prompt(&H, TTH_ALPHA, CH1, sys));
    free(sys);
    char *again = tth_prompt(&H, TTH_ALPHA, CH1, NULL);
    ck_assert_str_eq(again, text);
    free(again);
    free(text);
}

START_TEST(test_session_model_text_appended_once_channel_policy)
{
    session_text_once("one per-channel session", "each thread gets its own");
    /* A systemPrompt that is not text cannot be checked: appended, and said. */
    json_t *ctx = json_pack("{s:s, s:s, s:s}", "agentId", TTH_ALPHA, "sessionKey",
                            "agent:alpha:discord:channel:" CH1, "channelId", CH1);
    json_t *ev = json_pack("{s:i}", "systemPrompt", 7);
    json_t *r = NULL;
    ck_assert_int_eq(tth_call(&H, "before_prompt_build", ev, ctx, &r), OC_OK);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(r, "appendSystemContext")),
                                 "one per-channel session"));
    ck_assert(tth_log_has(&H, "before_prompt_build: event.systemPrompt is not a string"));
    json_decref(r);
    json_decref(ev);
    json_decref(ctx);
}
END_TEST

START_TEST(test_session_model_text_appended_once_thread_policy)
{
    session_text_once("each thread gets its own", "one per-channel session");
}
END_TEST

START_TEST(test_env_policy_override_reaches_the_hooks)
{
    tth_free(&H);
    setenv("DIRIGENT_SESSION_POLICY", "thread", 1);
    /* tth_start clears the variable: set it after and restart. */
    tth_start(&H, "channel", NULL);
    setenv("DIRIGENT_SESSION_POLICY", "thread", 1);
    tth_restart(&H);
    char *text = tth_prompt(&H, TTH_ALPHA, CH1, NULL);
    ck_assert_ptr_nonnull(strstr(text, "each thread gets its own"));
    free(text);
    unsetenv("DIRIGENT_SESSION_POLICY");
}
END_TEST

/* The cases of turn_hooks and turn_hooks_pg (on_pg: the plugin's store is
 * a PostgreSQL database, tests/support/pg_server.h). */
START_TEST(test_engine_refuses_bad_sessions_and_ids)
{
    /* The hooks validate before they call the engine; the engine's own
     * entry points refuse what no hook would pass, changing nothing. */
    dg_turns *t = tth_plugin(&H)->turns;
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    char key[200], longid[DG_SCOPE_ID_MAX + 8];
    memset(longid, '7', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';
    const dg_turn_session bad[] = {
        {.agent_id = "", .session_key = "k", .channel_id = CH1},
        {.agent_id = TTH_ALPHA, .session_key = NULL, .channel_id = CH1},
        {.agent_id = TTH_ALPHA, .session_key = "k", .channel_id = longid},
        {.agent_id = TTH_ALPHA, .session_key = "k", .channel_id = CH1, .thread_id = longid},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dg_turn_verdict v;
        ck_assert_int_eq(dg_turns_resolve_run(t, &bad[i], NULL, &v), OC_ERR_INVALID);
        dg_turn_claim cl;
        ck_assert_int_eq(dg_turns_claim(t, &bad[i], NULL, NULL, &cl), OC_ERR_INVALID);
        int cancel = 0, managed = 1;
        char reason[128];
        ck_assert_int_eq(
            dg_turns_check_outbound(t, &bad[i], NULL, "x", &cancel, reason, sizeof reason),
            OC_ERR_INVALID);
        ck_assert_int_eq(dg_turns_check_send(t, &bad[i], "x", &cancel, reason, sizeof reason),
                         OC_ERR_INVALID);
        ck_assert_int_eq(dg_turns_channel_managed(t, &bad[i], &managed), OC_ERR_INVALID);
        ck_assert_int_eq(dg_turns_run_end(t, &bad[i], NULL, "x", 0, 1), OC_ERR_INVALID);
    }
    /* An empty run id is no run id. */
    const dg_turn_session alpha = {.agent_id = TTH_ALPHA,
                                   .channel_id = CH1,
                                   .session_key =
                                       tth_session_key(key, sizeof key, TTH_ALPHA, CH1, NULL)};
    dg_turn_verdict v;
    ck_assert_int_eq(dg_turns_resolve_run(t, &alpha, "", &v), OC_OK);
    ck_assert_int_eq(v.no_reply, 0);
    dg_turn_claim cl;
    ck_assert_int_eq(dg_turns_claim(t, &alpha, "", NULL, &cl), OC_OK);
    ck_assert_int_eq(cl.claimed, 0);
    /* Discussion calls with empty or oversized ids. */
    dg_store *st = tth_plugin(&H)->store;
    const char *order[] = {TTH_BRAVO, ""};
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_turns_prefill_discussion(t, CH2, "", NULL, 0, 1), OC_ERR_INVALID);
    ck_assert_int_eq(dg_turns_prefill_discussion(t, longid, TTH_ALPHA, NULL, 0, 1), OC_ERR_INVALID);
    ck_assert_int_eq(dg_turns_prefill_discussion(t, CH2, TTH_ALPHA, order, 2, 1), OC_ERR_INVALID);
    const char *many[DG_TURN_MAX_MEMBERS + 1];
    char names[DG_TURN_MAX_MEMBERS + 1][16];
    for (int i = 0; i <= DG_TURN_MAX_MEMBERS; i++) {
        snprintf(names[i], sizeof names[i], "agent%d", i);
        many[i] = names[i];
    }
    ck_assert_int_eq(
        dg_turns_prefill_discussion(t, CH2, TTH_ALPHA, many, DG_TURN_MAX_MEMBERS + 1, 1),
        OC_ERR_INVALID);
    /* A repeated participant counts once. */
    const char *twice[] = {TTH_BRAVO, TTH_BRAVO, TTH_CHARLIE};
    ck_assert_int_eq(dg_turns_prefill_discussion(t, CH2, TTH_ALPHA, twice, 3, 1), OC_OK);
    ck_assert_int_eq(dg_turns_close_channel(t, "", 1), OC_ERR_INVALID);
    ck_assert_int_eq(dg_turns_wake_with_result(t, CH1, "", 1), OC_ERR_INVALID);
    ck_assert_int_eq(dg_turns_wake_with_result(t, longid, TTH_ALPHA, 1), OC_ERR_INVALID);
    dg_store_rollback(st);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    dg_scope sc;
    ck_assert_int_eq(dg_scope_conversation(CH1, &sc), OC_OK);
    int members = 0;
    dg_channel_mode mode;
    ck_assert_int_eq(dg_turns_peek(t, &sc, NULL, &mode, &members), OC_OK);
    ck_assert_int_eq(members, 3);
    ck_assert_int_eq(mode, DG_MODE_NORMAL);
}
END_TEST

/* ---- a store that cannot start a transaction ------------------------------------------- */

static void setup_faulty_store(void)
{
    ck_assert_int_eq(fv_install(), 0); /* before the plugin opens its database */
    setup_channel();
}

START_TEST(test_store_unavailable_every_hook_fails_cleanly)
{
    /* The disk or the lock file fails: no transaction can start. Each hook
     * says so (OC_ERR_IO and a line naming the store) and changes nothing;
     * once the store works again the turn goes on where it was. */
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    fv_fail_begin(1);
    char lost[24];
    mid(lost);
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, lost, TTH_HUMAN_UID, 0, "lost", NULL), OC_ERR_IO);
    ck_assert(tth_log_has(&H, "message_received: the state database is not available"));
    ck_assert_int_eq(tth_end(&H, TTH_ALPHA, CH1, NULL, "my answer", 0), OC_ERR_IO);
    /* A session the mirror knows is decided from it (bravo does not hold
     * the turn: no-reply); a new one needs the store and gets no decision. */
    ck_assert_int_eq(tth_resolve(&H, TTH_BRAVO, CH1, NULL), 1);
    ck_assert_int_eq(tth_resolve(&H, TTH_DELTA, CH1, NULL), -1);
    ck_assert(tth_log_has(&H, "before_model_resolve: no decision for delta in channel " CH1
                              " (OC_ERR_IO)"));
    ck_assert_int_ge(fv_refused(), 3);
    fv_fail_begin(0);
    /* Nothing moved: alpha still holds the turn, delta never joined, and
     * the message refused is taken as new when the host delivers it again. */
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 0);
    char who[40];
    ck_assert_int_eq(dg_turns_member(tth_plugin(&H)->turns, CH1, 3, who, sizeof who),
                     OC_ERR_NOT_FOUND);
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, lost, TTH_HUMAN_UID, 0, "lost", NULL), OC_OK);
    ck_assert_int_eq(tth_end(&H, TTH_ALPHA, CH1, NULL, "my answer", 0), OC_OK);
    ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), 1);
}
END_TEST

START_TEST(test_timeout_waits_for_a_failing_store)
{
    /* The speaker's run hangs and its time runs out while the store cannot
     * start a transaction: the sweeper tries again each pass and moves the
     * turn once the store works (turns_sweeper.c:expire_scope, and the
     * discussion timers' pass, dg_discuss_sweep, return at the failed
     * begin without a line: the next pass a second later is the retry). */
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "x"), 0);
    ck_assert_int_eq(run(TTH_CHARLIE, CH1, NULL, "x"), 0);
    ck_assert_int_eq(tth_resolve(&H, TTH_ALPHA, CH1, NULL), 0);
    fv_fail_begin(1);
    long before = fv_refused();
    tth_advance(&H, 61 * 1000);
    /* Two refused passes of the sweeper (about a second apart; bounded). */
    for (int i = 0; i < 200 && fv_refused() < before + 2; i++) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    ck_assert_int_ge(fv_refused(), before + 2);
    fv_fail_begin(0);
    ck_assert_msg(wait_outbox(CH1, 1), "the turn did not move once the store recovered");
    char *c = tth_outbox_content(&H, CH1, 0, NULL);
    ck_assert_str_eq(c, "<@" TTH_BRAVO_UID ">");
    free(c);
    ck_assert_int_eq(peek(CH1, NULL, NULL).speaker, 1);
}
END_TEST

/* Marks of message id in the store (0 or 1), through a connection of its own. */
static int marks_of(const char *id)
{
    sqlite3 *db;
    char *path = tu_path(H.dir, "dirigent.db");
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    free(path);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(db,
                                        "SELECT (SELECT COUNT(*) FROM turn_ledger WHERE k < "
                                        "'~' AND instr(k, ?1) > 0) + (SELECT COUNT(*) FROM "
                                        "turn_seen WHERE instr(k, ?1) > 0)",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

START_TEST(test_read_fault_sweep_changes_nothing_half_way)
{
    /* The nth read of the database fails (a failing disk, faultvfs.h) while
     * a human message is ingested or a speaker's run ends, for n = 1, 2, ...
     * until a call read less. Each step: the call succeeds, or fails with
     * OC_ERR_IO having changed nothing -- no mark of the message, the turn
     * where it was -- and then goes through once when the host calls again.
     * _i = 1: each step on a fresh instance (restarted: its mirror empty),
     * so the reads behind the engine's lookups fail too. */
    join3(CH1, NULL);
    human_says(CH1, NULL, "go", NULL);
    char id[24];
    long n;
    int failed = 0;
    for (n = 1; n < 300; n++) {
        mid(id);
        if (_i) { /* cold: a fresh instance, its mirror empty, every lookup read */
            tth_restart(&H);
        }
        dg_store_test_drop_pages(tth_plugin(&H)->store);
        fv_fail_read_nth(n);
        int rc = tth_msg(&H, CH1, NULL, id, TTH_HUMAN_UID, 0, "read fault", NULL);
        int hit = fv_fail_read_nth_hit();
        fv_fail_read_nth(0);
        if (rc != OC_OK) {
            failed++;
            ck_assert_msg(rc == OC_ERR_IO, "read %ld: %s", n, oc_status_name(rc));
            ck_assert_int_eq(marks_of(id), 0);
            ck_assert_int_eq(tth_msg(&H, CH1, NULL, id, TTH_HUMAN_UID, 0, "read fault", NULL),
                             OC_OK);
        }
        ck_assert_int_eq(marks_of(id), 1);
        int spk = who_speaks(ABC, 3, CH1, NULL);
        ck_assert_int_ge(spk, 0);
        dg_store_test_drop_pages(tth_plugin(&H)->store);
        fv_fail_read_nth(n);
        rc = tth_end(&H, ABC[spk], CH1, NULL, "NO_REPLY", 0);
        hit |= fv_fail_read_nth_hit();
        fv_fail_read_nth(0);
        if (rc != OC_OK) {
            failed++;
            ck_assert_msg(rc == OC_ERR_IO, "read %ld: %s", n, oc_status_name(rc));
            ck_assert_int_eq(who_speaks(ABC, 3, CH1, NULL), spk);
            ck_assert_int_eq(tth_end(&H, ABC[spk], CH1, NULL, "NO_REPLY", 0), OC_OK);
        }
        ck_assert_int_ne(who_speaks(ABC, 3, CH1, NULL), spk);
        if (!hit)
            break;
    }
    ck_assert_int_lt(n, 300);
    ck_assert_int_gt(failed, 0);
}
END_TEST

/*
 * Not reached by any test (make coverage), each an error path
 * or a guard; the kinds, then where:
 *  (a) a store statement failing after its transaction began, on a page
 *      already cached: the fault sweeps here fail the begin or a page read
 *      (faultvfs.h), and the engine serves most lookups from its mirror, so
 *      the store call is never the one that fails. turns_engine.c:
 *      turns_refresh_channel, arm_kickoff, turns_session_prepare (turns_follow_scope),
 *      turns_message_scope, dg_turns_prefill_discussion (scope),
 *      dg_turns_wake_with_result (load, save, member add, scope);
 *      turns_ingest.c: closed_notice (turns_chan_save, notice claim, render),
 *      deliver_locked, ingest_locked (every "return rc" after
 *      turns_message_scope, discussion touch, turns_member_ensure, turns_scope_get,
 *      turns_follow_scope, turns_chan_save, turns_queue_effects, and the seen-mark prune, run
 *      every TURNS_SEEN_PRUNE_EVERY ingests); turns_decide.c: decide (a begin
 *      failing on the retry after the mirror was dropped), send_fn,
 *      dg_turns_check_outbound, dg_turns_channel_managed, run_end_locked
 *      (save, turns_queue_effects); turns_sweeper.c: expire_scope's error line
 *      (a failure after the begin); turn_view.c: dg_turn_view_load (a scope
 *      read failing); turns_engine.c: dg_turns_peek, dg_turns_member (their
 *      begin failing, the mirror answering first).
 *  (b) allocation failures on the sweeper thread, which failalloc.h does not
 *      fail (only the arming thread): turns_sweeper.c: collect_due,
 *      evict_idle and unmark_evict (dg_map_retain out of memory);
 *      turns_engine.c: collect_scope; str_map.c: dg_map_retain (calloc).
 *      turns_engine.c: turns_session_prepare (strdup of the thread): the hook
 *      allocation sweeps fail an earlier allocation of the same call first.
 *  (c) library calls that do not fail here: turns_sweeper.c: dg_turns_start
 *      (pthread_create), sweeper (tv_nsec carry: clock_gettime's nanoseconds
 *      plus the wait never reach a second in one step of the code's timing).
 *  (d) guards of states the engine never builds: turns_engine.c: turns_scope_get
 *      (a conversation scope record handed out while it is created),
 *      sync_changes (the change ring overrun, TURNS_INVAL_RING changes between two
 *      transactions), turns_member_ensure (a 65th member: the test config has 8
 *      agents and no channel more), turns_session_lookup_locked (a channel changed
 *      outside the engine, a prefilled non-member: answered by the slow
 *      path first), turns_install (more than TURNS_MAX_PENDING scopes in one change),
 *      turns_mark_add and turns_mark_find_ex (an empty run id: the hooks and the entry
 *      points above turn it into NULL first; another run's live mark),
 *      turns_user_of (a position out of range), turns_queue_effects (a wake already
 *      delivered), dg_turns_wake_with_result (a full order);
 *      turns_ingest.c: ingest_locked (a moderator message in a scope with no
 *      row, a top-level thread change's strdup), dg_turns_ingest (a
 *      recipient the hook validated); turns_decide.c: decide (the mirror
 *      dropped under every retry), dg_turns_claim (its begin failing, a kick
 *      after a claim), send_fn (a closed channel: check_outbound cancels
 *      first), run_end_locked (a swap recorded by another run);
 *      turns_sweeper.c: expire_scope (the timeout line's cause text when the
 *      state is unchanged), sweep (timeoutSec 0 is refused by the config).
 *  (e) turns_engine.c: wake_fingerprint (leading blank lines, a user mention,
 *      a cut inside a character, trailing blanks), message_fingerprint (a
 *      cut inside a character), turns_render_and_enqueue (a template that cannot
 *      be rendered): the built-in templates start with text, carry no
 *      mention on the first line and are short; a templatesDir that changes
 *      that is an operator's choice no suite makes.
 */

static void *take_writer_and_leave(void *arg)
{
    turns_writer_lock(arg);
    return NULL;
}

/* "Writer held" asks which thread holds the writer: the holder passes, a
 * thread calling while another holds it aborts (a trylock would pass it). */
START_TEST(test_writer_assertion_names_the_holding_thread)
{
    dg_turns *t = calloc(1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    pthread_mutex_init(&t->wmu, NULL);
    turns_writer_lock(t);
    TURNS_ASSERT_WRITER(t);
    turns_writer_unlock(t);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 2); /* the assertion's own line is expected */
        pthread_t other;
        if (pthread_create(&other, NULL, take_writer_and_leave, t) != 0 ||
            pthread_join(other, NULL) != 0)
            _exit(2);
        TURNS_ASSERT_WRITER(t);
        _exit(0);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
                  "a writer held by another thread passed the assertion (status %d)", status);
    pthread_mutex_destroy(&t->wmu);
    free(t);
}
END_TEST

static Suite *turn_hooks_suite(const char *name, int on_pg)
{
    Suite *s = suite_create(name);
    if (on_pg && pgs_skipped())
        return s;
    TCase *ch = tcase_create("channel_policy");
    if (on_pg)
        pgs_on_pg(ch, 0);
    tcase_add_checked_fixture(ch, setup_channel, teardown);
    tcase_set_timeout(ch, 60);
    tcase_add_test(ch, test_registers_the_nine_hooks);
    tcase_add_test(ch, test_three_agents_count_to_eleven_in_turn);
    tcase_add_test(ch, test_channel_policy_threads_share_one_rotation);
    tcase_add_test(ch, test_dm_is_one_conversation_under_channel_policy);
    tcase_add_test(ch, test_message_ingested_once_across_accounts);
    tcase_add_test(ch, test_turn_advances_at_agent_end);
    tcase_add_test(ch, test_agent_end_replayed_with_same_run_id_is_ignored);
    tcase_add_test(ch, test_tool_only_turn_keeps_channel_awake);
    tcase_add_test(ch, test_decorated_no_reply_lets_channel_sleep);
    tcase_add_test(ch, test_moderator_messages_never_wake);
    tcase_add_test(ch, test_busy_channel_caps_speaker_runs);
    tcase_add_test(ch, test_one_state_owner_across_sessions_and_restart);
    tcase_add_test(ch, test_restart_mid_round_keeps_next_speaker);
    tcase_add_test(ch, test_concurrent_hooks_from_8_threads_keep_one_speaker);
    if (!on_pg) /* it fails a commit through a SQLite commit hook */
        tcase_add_test(ch, test_failed_commit_is_never_seen_and_leaves_the_turn);
    tcase_add_test(ch, test_state_row_round_trip);
    tcase_add_test(ch, test_handoff_mentions_next_speaker_once);
    tcase_add_test(ch, test_only_bare_mentions_are_handoffs);
    tcase_add_test(ch, test_engine_refuses_bad_sessions_and_ids);
    tcase_add_test(ch, test_loop_guard_rests_scope_and_says_so_once);
    tcase_add_test(ch, test_loop_guard_notice_from_templates_dir);
    tcase_add_test(ch, test_blank_session_model_text_appends_nothing);
    tcase_add_test(ch, test_timeout_moves_the_turn);
    tcase_add_test(ch, test_plugin_threads_never_wait_on_a_busy_host_thread);
    tcase_add_test(ch, test_first_message_mentions_an_unseen_agent);
    tcase_add_test(ch, test_author_of_the_latest_message_is_woken_when_the_turn_returns);
    tcase_add_test(ch, test_hung_speaker_times_out_without_further_events);
    tcase_add_test(ch, test_hung_speaker_times_out_after_a_restart);
    tcase_add_test(ch, test_human_mention_limits_turns);
    tcase_add_test(ch, test_human_mention_rendered_as_text_picks_the_agent);
    tcase_add_test(ch, test_mention_inside_code_is_no_mention);
    tcase_add_test(ch, test_human_message_resets_cycle_and_counter);
    tcase_add_test(ch, test_speaking_after_passes_hands_on_to_the_next);
    tcase_add_test(ch, test_unmanaged_channel_and_unknown_agents_get_nothing);
    tcase_add_test(ch, test_message_sending_cancels_non_speaker);
    tcase_add_test(ch, test_malformed_event_refused_with_reason);
    tcase_add_test(ch, test_agent_delivery_without_channel_refused);
    tcase_add_test(ch, test_malformed_message_fields_are_refused_and_change_nothing);
    tcase_add_test(ch, test_huge_content_and_ids_reused_across_channels);
    tcase_add_test(ch, test_malformed_agent_end_is_refused_and_changes_nothing);
    tcase_add_test(ch, test_non_discord_channel_still_takes_turns);
    tcase_add_test(ch, test_session_model_text_appended_once_channel_policy);
    tcase_add_test(ch, test_env_policy_override_reaches_the_hooks);
    tcase_add_test(ch, test_discussion_prefill_first_participant_speaks);
    tcase_add_test(ch, test_discussion_idle_reminder_once_per_idle_period);
    tcase_add_test(ch, test_idle_reminders_do_not_feed_a_loop);
    tcase_add_test(ch, test_discussion_turn_the_budget_allowed_is_delivered);
    tcase_add_test(ch, test_discussion_quiet_reminder_once_per_quiet_period);
    tcase_add_test(ch, test_discussion_quiet_reminder_off_with_zero);
    tcase_add_test(ch, test_discussion_lifetime_wrapup_then_expiry);
    tcase_add_test(ch, test_discussion_timers_run_in_the_background);
    tcase_add_test(ch, test_discussion_elsewhere_keeps_runs_in_flight);
    tcase_add_test(ch, test_closed_channel_overrides_cancels_and_never_wakes);
    tcase_add_test(ch, test_closed_notice_cooldown_per_channel);
    suite_add_tcase(s, ch);

    if (!on_pg) {
        TCase *fs = tcase_create("faulty_store");
        tcase_add_checked_fixture(fs, setup_faulty_store, teardown);
        tcase_set_timeout(fs, 60);
        tcase_add_test(fs, test_store_unavailable_every_hook_fails_cleanly);
        tcase_add_test(fs, test_timeout_waits_for_a_failing_store);
        tcase_add_loop_test(fs, test_read_fault_sweep_changes_nothing_half_way, 0, 2);
        suite_add_tcase(s, fs);
    }

    if (!on_pg) {
        TCase *wr = tcase_create("writer");
        tcase_add_test(wr, test_writer_assertion_names_the_holding_thread);
        suite_add_tcase(s, wr);
    }

    TCase *nc = tcase_create("no_cooldown");
    if (on_pg)
        pgs_on_pg(nc, 0);
    tcase_add_checked_fixture(nc, setup_no_cooldown, teardown);
    tcase_add_test(nc, test_closed_notice_once_per_message);
    tcase_add_test(nc, test_closed_notice_no_ping_pong_with_a_bot);
    suite_add_tcase(s, nc);

    TCase *th = tcase_create("thread_policy");
    if (on_pg)
        pgs_on_pg(th, 1);
    tcase_add_checked_fixture(th, setup_thread, teardown);
    tcase_set_timeout(th, 60);
    tcase_add_test(th, test_three_agents_count_to_eleven_in_a_thread);
    tcase_add_test(th, test_thread_policy_two_threads_rotate_independently);
    tcase_add_test(th, test_dm_is_one_conversation_under_thread_policy);
    tcase_add_test(th, test_handoff_goes_to_the_discord_thread);
    tcase_add_test(th, test_loop_guard_counts_across_top_level_threads);
    tcase_add_test(th, test_thread_policy_channel_session_follows_latest_top_level_thread);
    tcase_add_test(th, test_session_key_supplies_missing_context);
    tcase_add_test(th, test_old_finished_threads_leave_the_database);
    tcase_add_test(th, test_idle_threads_leave_the_memory);
    tcase_add_test(th, test_dormant_threads_bounded_by_count);
    tcase_add_test(th, test_session_model_text_appended_once_thread_policy);
    suite_add_tcase(s, th);
    return s;
}

Suite *make_turn_hooks_suite(void)
{
    return turn_hooks_suite("turn_hooks", 0);
}

Suite *make_turn_hooks_pg_suite(void)
{
    return turn_hooks_suite("turn_hooks_pg", 1);
}
