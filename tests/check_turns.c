/*
 * check_turns.c -- the turn manager's pure logic (turns.h) on plain
 * structs with a hand-moved clock: wake rules, rotation, dormancy,
 * timeouts, mentions, the loop guard, hand-offs, discussion idle.
 */
#include <check.h>
#include <string.h>

#include "turns.h"

enum { A = 0, B = 1, C = 2, D = 3 };
#define BIT(p) ((uint64_t)1 << (p))

static dg_rule_ctx ctx3(void)
{
    dg_rule_ctx c = {.n_members = 3,
                     .present = 7,
                     .mode = DG_MODE_NORMAL,
                     .initiator = DG_NOBODY,
                     .timeout_ms = 60000,
                     .max_agent_msgs = 40};
    return c;
}

static dg_rule_effects fx;

static void human(dg_turn_state *s, const dg_rule_ctx *c, uint64_t mentions, int64_t now)
{
    dg_rule_effects_init(&fx);
    dg_rule_on_message(s, c, DG_SENDER_HUMAN, DG_NOBODY, mentions, now, &fx);
}

static void agent_msg(dg_turn_state *s, const dg_rule_ctx *c, int pos, int64_t now)
{
    dg_rule_effects_init(&fx);
    dg_rule_on_message(s, c, DG_SENDER_AGENT, pos, 0, now, &fx);
}

static void end(dg_turn_state *s, const dg_rule_ctx *c, int pos, dg_run_outcome o, int64_t now)
{
    dg_rule_effects_init(&fx);
    dg_rule_on_run_end(s, c, pos, o, 1, -1, now, &fx);
}

START_TEST(test_dormant_scope_overrides_everyone)
{
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), DG_NOBODY);
    for (int p = A; p <= C; p++)
        ck_assert(dg_rule_needs_override(&s, &c, p, 0));
}
END_TEST

START_TEST(test_human_wakes_first_agent)
{
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), A);
    ck_assert(!dg_rule_needs_override(&s, &c, A, 1000));
    ck_assert(dg_rule_needs_override(&s, &c, B, 1000));
    ck_assert(dg_rule_needs_override(&s, &c, C, 1000));
    ck_assert(dg_rule_needs_override(&s, &c, DG_NOBODY, 1000));
    ck_assert_int_eq(s.msg_seq, 1);
}
END_TEST

START_TEST(test_agent_sender_wakes_the_next_agent)
{
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    agent_msg(&s, &c, B, 1000);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), C);
    agent_msg(&s, &c, C, 2000);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), A);
    ck_assert_int_eq(s.agent_msgs, 2);
}
END_TEST

START_TEST(test_other_bot_is_outside_the_order)
{
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    dg_rule_on_message(&s, &c, DG_SENDER_BOT, DG_NOBODY, 0, 1000, &fx);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), A);
    ck_assert_int_eq(s.agent_msgs, 1); /* counts for the loop guard */
}
END_TEST

START_TEST(test_full_silent_cycle_goes_dormant)
{
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    end(&s, &c, A, DG_RUN_SILENT, 1100);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), B);
    end(&s, &c, B, DG_RUN_SILENT, 1200);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), C);
    end(&s, &c, C, DG_RUN_SILENT, 1300);
    ck_assert_int_eq(s.active, 0);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), DG_NOBODY);
}
END_TEST

START_TEST(test_silent_agents_are_skipped_until_a_real_message)
{
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    end(&s, &c, A, DG_RUN_SILENT, 1100); /* A passes */
    end(&s, &c, B, DG_RUN_SPOKE, 1200);  /* B speaks */
    agent_msg(&s, &c, B, 1250);          /* its message resets the cycle */
    ck_assert_uint_eq(s.silent, BIT(B)); /* but for its author */
    ck_assert_int_eq(dg_rule_speaker(&s, &c), C);
    end(&s, &c, C, DG_RUN_SILENT, 1300);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), A); /* A is eligible again */
    end(&s, &c, A, DG_RUN_SILENT, 1400);
    ck_assert_int_eq(s.active, 0); /* B is not asked to pass on its own message */
    ck_assert_int_eq(fx.handoff_to, DG_NOBODY);
}
END_TEST

/* One question, one answer: the answer's author is not handed the turn to
 * pass on its own message, whether its run ends before its message
 * arrives or after. */
START_TEST(test_author_is_not_asked_to_pass_on_its_own_message)
{
    dg_rule_ctx c = ctx3();
    for (int arrives_first = 0; arrives_first < 2; arrives_first++) {
        dg_turn_state s;
        dg_turn_state_init(&s);
        human(&s, &c, 0, 1000);
        if (arrives_first)
            agent_msg(&s, &c, A, 1100);
        end(&s, &c, A, DG_RUN_SPOKE, 1150); /* A answers */
        if (!arrives_first)
            agent_msg(&s, &c, A, 1200);
        ck_assert_int_eq(dg_rule_speaker(&s, &c), B);
        end(&s, &c, B, DG_RUN_SILENT, 1300);
        ck_assert_int_eq(dg_rule_speaker(&s, &c), C);
        end(&s, &c, C, DG_RUN_SILENT, 1400);
        /* The round ends: no hand-off to A, no model call to say NO_REPLY. */
        ck_assert_int_eq(s.active, 0);
        ck_assert_int_eq(fx.handoff_to, DG_NOBODY);
    }
}
END_TEST

/* An agent that wrote the latest message into a dormant scope, or whose
 * message woke it, does not get the turn back before someone else speaks. */
START_TEST(test_author_alone_left_ends_the_round)
{
    dg_rule_ctx c = ctx3();
    c.n_members = 2;
    c.present = BIT(A) | BIT(B);
    dg_turn_state s;
    dg_turn_state_init(&s);
    agent_msg(&s, &c, A, 1000); /* wakes the scope: B is next */
    ck_assert_int_eq(dg_rule_speaker(&s, &c), B);
    end(&s, &c, B, DG_RUN_SILENT, 1100);
    ck_assert_int_eq(s.active, 0);
    ck_assert_int_eq(fx.handoff_to, DG_NOBODY);
}
END_TEST

START_TEST(test_tool_only_turn_is_not_a_pass)
{
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    end(&s, &c, A, DG_RUN_ACTED, 1100);
    end(&s, &c, B, DG_RUN_SILENT, 1200);
    end(&s, &c, C, DG_RUN_SILENT, 1300);
    ck_assert_int_eq(s.active, 1); /* not dormant: A acted */
    ck_assert_int_eq(dg_rule_speaker(&s, &c), A);
}
END_TEST

START_TEST(test_non_speaker_run_end_changes_no_turn)
{
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    end(&s, &c, B, DG_RUN_SILENT, 1100);
    end(&s, &c, C, DG_RUN_SPOKE, 1100);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), A);
    ck_assert_uint_eq(s.silent, 0);
    ck_assert_uint_eq(s.consumed, BIT(B) | BIT(C));
}
END_TEST

START_TEST(test_timeout_loses_the_turn)
{
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    ck_assert(!dg_rule_needs_override(&s, &c, A, 60999));
    ck_assert(dg_rule_needs_override(&s, &c, A, 61000)); /* A timed out */
    ck_assert(!dg_rule_needs_override(&s, &c, B, 61000));
    /* Read-only: the state itself is untouched. */
    ck_assert_int_eq(dg_rule_speaker(&s, &c), A);
    /* Three timeouts in a row: everybody passed, dormant. */
    dg_rule_expire(&s, &c, 1000 + 3 * 60000, NULL);
    ck_assert_int_eq(s.active, 0);
    /* A late agent_end of A does not move anything. */
    end(&s, &c, A, DG_RUN_SPOKE, 200000);
    ck_assert_int_eq(s.active, 0);
}
END_TEST

START_TEST(test_may_send_after_own_turn_ended)
{
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    ck_assert(dg_rule_may_send(&s, &c, A, 1000));
    ck_assert(!dg_rule_may_send(&s, &c, B, 1000));
    end(&s, &c, A, DG_RUN_SPOKE, 2000); /* agent_end comes before sending */
    ck_assert_int_eq(dg_rule_speaker(&s, &c), B);
    ck_assert(dg_rule_may_send(&s, &c, A, 2001));
    ck_assert(dg_rule_may_send(&s, &c, B, 2001));
    ck_assert(!dg_rule_may_send(&s, &c, C, 2001));
    ck_assert(!dg_rule_may_send(&s, &c, A, 2000 + 60001)); /* permit expired */
}
END_TEST

START_TEST(test_human_mentions_restrict_the_turns)
{
    dg_rule_ctx c = {.n_members = 4, .present = 15, .initiator = DG_NOBODY, .timeout_ms = 60000};
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, BIT(D) | BIT(B), 1000);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), B);
    ck_assert(dg_rule_needs_override(&s, &c, A, 1000));
    end(&s, &c, B, DG_RUN_SPOKE, 1100);
    agent_msg(&s, &c, B, 1150);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), D); /* C skipped: not mentioned */
    end(&s, &c, D, DG_RUN_SILENT, 1200);
    /* Each mentioned one had its turn: the restriction is lifted. */
    ck_assert_uint_eq(s.mention, 0);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), A);
}
END_TEST

START_TEST(test_mentioned_agents_all_passing_lifts_the_restriction)
{
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, BIT(C), 1000);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), C);
    end(&s, &c, C, DG_RUN_SILENT, 1100);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), A);
    end(&s, &c, A, DG_RUN_SILENT, 1200);
    end(&s, &c, B, DG_RUN_SILENT, 1300);
    ck_assert_int_eq(s.active, 0);
}
END_TEST

START_TEST(test_loop_guard_rests_once_until_a_human)
{
    dg_rule_ctx c = ctx3();
    c.max_agent_msgs = 5;
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    int notices = 0;
    for (int i = 0; i < 12; i++) {
        agent_msg(&s, &c, i % 3, 2000 + i);
        notices += fx.rest_notice;
        if (i < 4)
            ck_assert_int_eq(s.active, 1);
        else
            ck_assert_int_eq(s.active, 0);
    }
    ck_assert_int_eq(notices, 1);
    /* A moderator message does not lift a rest, a hand-off changes nothing. */
    dg_rule_on_message(&s, &c, DG_SENDER_MODERATOR, DG_NOBODY, 0, 3000, &fx);
    ck_assert_int_ge(s.agent_msgs, 5);
    human(&s, &c, 0, 4000);
    ck_assert_int_eq(s.active, 1);
    ck_assert_int_eq(s.agent_msgs, 0);
    ck_assert_int_eq(s.rested, 0);
}
END_TEST

START_TEST(test_moderator_never_wakes)
{
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    dg_rule_on_message(&s, &c, DG_SENDER_MODERATOR, DG_NOBODY, BIT(A), 1000, &fx);
    dg_rule_on_message(&s, &c, DG_SENDER_HANDOFF, DG_NOBODY, BIT(A), 1000, &fx);
    ck_assert_int_eq(s.active, 0);
    ck_assert_int_eq(s.msg_seq, 0);
}
END_TEST

START_TEST(test_handoff_to_an_agent_that_consumed_the_message)
{
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    /* B and C ran on the message (swapped to no-reply) before A finished. */
    end(&s, &c, B, DG_RUN_SILENT, 1010);
    end(&s, &c, C, DG_RUN_SILENT, 1010);
    end(&s, &c, A, DG_RUN_SILENT, 1100);
    ck_assert_int_eq(fx.handoff_to, B);
    ck_assert_int_eq(s.handoff, B);
    /* B's run for the hand-off ends silently: on to C, also mentioned. */
    end(&s, &c, B, DG_RUN_SILENT, 1200);
    ck_assert_int_eq(fx.handoff_to, C);
    end(&s, &c, C, DG_RUN_SILENT, 1300);
    ck_assert_int_eq(fx.handoff_to, DG_NOBODY);
    ck_assert_int_eq(s.active, 0);
}
END_TEST

START_TEST(test_no_handoff_when_the_speaker_spoke_or_next_has_not_run)
{
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    end(&s, &c, B, DG_RUN_SILENT, 1010);
    end(&s, &c, A, DG_RUN_SPOKE, 1100); /* its message will wake B */
    ck_assert_int_eq(fx.handoff_to, DG_NOBODY);
    dg_turn_state_init(&s);
    human(&s, &c, 0, 2000);
    end(&s, &c, A, DG_RUN_SILENT, 2100); /* B has not run yet: it will */
    ck_assert_int_eq(fx.handoff_to, DG_NOBODY);
    ck_assert_int_eq(s.handoff, DG_NOBODY);
}
END_TEST

START_TEST(test_discussion_idle_reminds_initiator_once_then_rests)
{
    dg_rule_ctx c = ctx3();
    c.mode = DG_MODE_DISCUSSION;
    c.initiator = A;
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    end(&s, &c, A, DG_RUN_SILENT, 1100);
    end(&s, &c, B, DG_RUN_SILENT, 1200);
    end(&s, &c, C, DG_RUN_SILENT, 1300);
    ck_assert_int_eq(fx.idle_reminder, 1);
    ck_assert_int_eq(s.active, 1);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), A); /* the initiator holds the floor */
    end(&s, &c, A, DG_RUN_SILENT, 1400);          /* and stays silent too */
    ck_assert_int_eq(fx.idle_reminder, 0);
    ck_assert_int_eq(s.active, 0);
    /* No further reminder until a non-moderator message. */
    dg_rule_on_message(&s, &c, DG_SENDER_MODERATOR, DG_NOBODY, 0, 1500, &fx);
    ck_assert_int_eq(s.active, 0);
    ck_assert_int_eq(s.idle_reminded, 1);
    agent_msg(&s, &c, B, 2000);
    ck_assert_int_eq(s.idle_reminded, 0);
    end(&s, &c, C, DG_RUN_SILENT, 2100);
    end(&s, &c, A, DG_RUN_SILENT, 2200);
    /* A new idle period: B, its author, is not asked about its message. */
    ck_assert_int_eq(fx.idle_reminder, 1);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), A);
}
END_TEST

START_TEST(test_closed_channel_nothing_wakes)
{
    dg_rule_ctx c = ctx3();
    c.mode = DG_MODE_CLOSED;
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, BIT(A), 1000);
    agent_msg(&s, &c, A, 1100);
    ck_assert_int_eq(s.active, 0);
    for (int p = A; p <= C; p++) {
        ck_assert(dg_rule_needs_override(&s, &c, p, 1200));
        ck_assert(!dg_rule_may_send(&s, &c, p, 1200));
    }
    ck_assert(!dg_rule_managed(&c));
}
END_TEST

START_TEST(test_single_agent_is_unmanaged)
{
    dg_rule_ctx c = ctx3();
    c.n_members = 1;
    c.present = 1;
    dg_turn_state s;
    dg_turn_state_init(&s);
    ck_assert(!dg_rule_managed(&c));
    ck_assert(!dg_rule_needs_override(&s, &c, A, 0));
    ck_assert(dg_rule_may_send(&s, &c, A, 0));
    agent_msg(&s, &c, A, 1000);
    ck_assert_int_eq(s.speaker, DG_NOBODY); /* derived while unmanaged */
    /* A second agent joins: it, not the one that just spoke, is next. */
    c.n_members = 2;
    c.present = 3;
    ck_assert_int_eq(dg_rule_speaker(&s, &c), B);
    ck_assert(dg_rule_needs_override(&s, &c, A, 1000));
}
END_TEST

START_TEST(test_removed_agent_is_skipped)
{
    dg_rule_ctx c = ctx3();
    c.present = BIT(A) | BIT(C); /* B left the config */
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    end(&s, &c, A, DG_RUN_SILENT, 1100);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), C);
}
END_TEST

START_TEST(test_counting_to_eleven_in_turn)
{
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    int64_t t = 1000;
    for (int n = 1; n <= 11; n++) {
        int sp = dg_rule_speaker(&s, &c);
        ck_assert_int_eq(sp, (n - 1) % 3);
        for (int p = A; p <= C; p++)
            ck_assert_int_eq(dg_rule_needs_override(&s, &c, p, t), p != sp);
        end(&s, &c, sp, DG_RUN_SPOKE, t += 10);
        agent_msg(&s, &c, sp, t += 10);
    }
    ck_assert_int_eq(s.agent_msgs, 11);
}
END_TEST


START_TEST(test_late_message_of_a_passed_turn_is_old_news)
{
    /* A host runs every agent on one message in a row: A, B, C all speak
     * before A's message comes back; it must not pull the turn back to B. */
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    end(&s, &c, A, DG_RUN_SPOKE, 1100);
    end(&s, &c, B, DG_RUN_SPOKE, 1200);
    end(&s, &c, C, DG_RUN_SPOKE, 1300);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), A);
    agent_msg(&s, &c, A, 1400);
    agent_msg(&s, &c, B, 1401);
    agent_msg(&s, &c, C, 1402);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), A);
    ck_assert_uint_eq(s.owed, 0);
    ck_assert_int_eq(s.agent_msgs, 3);
}
END_TEST

START_TEST(test_message_before_run_end_passes_the_turn)
{
    /* Streaming hosts post while the run is still going. */
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    agent_msg(&s, &c, A, 1100);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), B);
    ck_assert(dg_rule_may_send(&s, &c, A, 1150)); /* the rest of its reply */
    end(&s, &c, A, DG_RUN_SPOKE, 1200);           /* no second advance */
    ck_assert_int_eq(dg_rule_speaker(&s, &c), B);
    /* A message from an agent without the turn changes nothing. */
    agent_msg(&s, &c, C, 1300);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), B);
}
END_TEST

START_TEST(test_swapped_run_ending_is_not_a_pass)
{
    /* B's run was swapped while A held the turn; A passes, the turn
     * reaches B, and only then B's forced NO_REPLY ends. */
    dg_rule_ctx c = ctx3();
    dg_turn_state s;
    dg_turn_state_init(&s);
    human(&s, &c, 0, 1000);
    end(&s, &c, A, DG_RUN_SILENT, 1100); /* B has not finished: no hand-off */
    ck_assert_int_eq(fx.handoff_to, DG_NOBODY);
    dg_rule_effects_init(&fx);
    dg_rule_on_run_end(&s, &c, B, DG_RUN_SILENT, 1, 0, 1200, &fx);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), B); /* still B's turn */
    ck_assert_uint_eq(s.silent, BIT(A));
    ck_assert_int_eq(fx.handoff_to, B); /* and B is woken */
    /* Another stale swapped run of B: no second mention. */
    dg_rule_effects_init(&fx);
    dg_rule_on_run_end(&s, &c, B, DG_RUN_SILENT, 1, 0, 1300, &fx);
    ck_assert_int_eq(fx.handoff_to, DG_NOBODY);
    /* B's real run for the mention passes on. */
    dg_rule_effects_init(&fx);
    dg_rule_on_run_end(&s, &c, B, DG_RUN_SILENT, 1, 1, 1400, &fx);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), C);
}
END_TEST

START_TEST(test_admin_words_and_names)
{
    ck_assert_str_eq(dg_channel_mode_name(DG_MODE_NORMAL), "normal");
    ck_assert_str_eq(dg_channel_mode_name(DG_MODE_DISCUSSION), "discussion");
    ck_assert_str_eq(dg_channel_mode_name(DG_MODE_CLOSED), "closed");
    ck_assert_str_eq(dg_channel_mode_name((dg_channel_mode)42), "unknown");
    ck_assert_int_eq(dg_admin_parse(NULL), DG_ADMIN_NONE);
    ck_assert_int_eq(dg_admin_parse("  !DIRIGENT  Wake bravo"), DG_ADMIN_WAKE);
    ck_assert_int_eq(dg_admin_parse("!dirigentwake"), DG_ADMIN_NONE);
    ck_assert_int_eq(dg_admin_parse("!dirigent frobnicate"), DG_ADMIN_UNKNOWN);
    ck_assert_int_eq(dg_admin_parse("!dirigent"), DG_ADMIN_HELP);
    ck_assert_int_eq(dg_admin_parse("!dirigent HELP me"), DG_ADMIN_HELP);
    char word[8];
    ck_assert_str_eq(dg_admin_suggest("!dirigent stauts", word, sizeof word), "status");
    ck_assert_str_eq(word, "stauts");
    ck_assert_str_eq(dg_admin_suggest("!dirigent sk", word, sizeof word), "skip");
    ck_assert_str_eq(dg_admin_suggest("!dirigent CLOES", NULL, 0), "close");
    ck_assert_ptr_null(dg_admin_suggest("!dirigent s", word, sizeof word)); /* too short */
    ck_assert_ptr_null(dg_admin_suggest("!dirigent frobnicate", word, sizeof word));
    ck_assert_str_eq(word, "frobnic"); /* cut to fit */
    ck_assert_ptr_null(dg_admin_suggest("!dirigent", word, sizeof word));
    ck_assert_str_eq(word, "");
    ck_assert_ptr_null(dg_admin_suggest("!dirigentstatus", word, sizeof word));
    char fix[32];
    ck_assert_int_eq(dg_admin_near_miss("!dirignet status", fix, sizeof fix), 1);
    ck_assert_str_eq(fix, "!dirigent status");
    ck_assert_int_eq(dg_admin_near_miss(" !DIRIGNT Stauts x", fix, sizeof fix), 1);
    ck_assert_str_eq(fix, "!dirigent status");
    ck_assert_int_eq(dg_admin_near_miss("!drigent there", fix, sizeof fix), 1);
    ck_assert_str_eq(fix, "!dirigent");
    ck_assert_int_eq(dg_admin_near_miss("!dirigent_ wake", NULL, 0), 0); /* starts right */
    ck_assert_int_eq(dg_admin_near_miss("!dirigen", fix, sizeof fix), 1);
    ck_assert_str_eq(fix, "!dirigent");
    ck_assert_int_eq(dg_admin_near_miss("!dirigent status", fix, sizeof fix), 0);
    ck_assert_int_eq(dg_admin_near_miss("!dirigentfoo", fix, sizeof fix), 0);
    ck_assert_int_eq(dg_admin_near_miss("dirigent status", fix, sizeof fix), 0);
    ck_assert_int_eq(dg_admin_near_miss("!diri status", fix, sizeof fix), 0); /* 4 edits */
    ck_assert_int_eq(dg_admin_near_miss(NULL, fix, sizeof fix), 0);
    ck_assert_int_eq(dg_admin_near_miss("", fix, sizeof fix), 0);
    char buf[8];
    ck_assert_int_eq(dg_admin_arg(NULL, buf, sizeof buf), 0);
    ck_assert_int_eq(dg_admin_arg("just text", buf, sizeof buf), 0);
    ck_assert_int_eq(dg_admin_arg("!dirigent wake", buf, sizeof buf), 0); /* no argument */
    ck_assert_int_eq(dg_admin_arg("!dirigent wake bravo", buf, 0), 0);
    ck_assert_int_eq(dg_admin_arg("!dirigent wake bravo", buf, sizeof buf), 1);
    ck_assert_str_eq(buf, "bravo");
    ck_assert_int_eq(dg_admin_arg("!dirigent wake verylongname", buf, sizeof buf), -1);
    /* wake names a member that is not present, or no member: refused,
     * the state untouched. */
    dg_rule_ctx c = ctx3();
    c.present = BIT(A) | BIT(B);
    dg_turn_state s, before;
    dg_turn_state_init(&s);
    before = s;
    ck_assert_int_eq(dg_rule_admin_wake(&s, &c, C, 1000), -1);
    ck_assert_int_eq(dg_rule_admin_wake(&s, &c, 7, 1000), -1);
    ck_assert_int_eq(dg_rule_admin_wake(&s, &c, -1, 1000), -1);
    ck_assert(dg_turn_state_same(&s, &before));
    ck_assert_int_eq(dg_rule_admin_wake(&s, &c, B, 1000), 0);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), B);

    /* A run end of no member changes nothing, in a closed channel it moves
     * no turn; nobody is no member that may send. */
    before = s;
    dg_rule_effects_init(&fx);
    dg_rule_on_run_end(&s, &c, 9, DG_RUN_SPOKE, 1, -1, 2000, &fx);
    ck_assert(dg_turn_state_same(&s, &before));
    c.mode = DG_MODE_CLOSED;
    dg_rule_on_run_end(&s, &c, B, DG_RUN_SPOKE, 0, -1, 2000, &fx);
    ck_assert_int_eq(dg_rule_speaker(&s, &c), B);
    c.mode = DG_MODE_NORMAL;
    ck_assert_int_eq(dg_rule_may_send(&s, &c, DG_NOBODY, 2000), 0);
}
END_TEST

/*
 * Not reached by any test (make coverage), guards of states the
 * engine never builds (it validates positions and sizes first):
 * turns.c:all_members (a 65th member), next_after (no member after a full
 * round), settle_wait (a wait for a position that is not the speaker),
 * expire_impl (an active scope whose speaker left), on_message_impl (a
 * mention set no present member is left in; a wake with no speaker),
 * on_run_end_impl (an acted run counted as an agent message).
 */

Suite *make_turns_suite(void)
{
    Suite *s = suite_create("turns");
    TCase *tc = tcase_create("logic");
    tcase_add_test(tc, test_dormant_scope_overrides_everyone);
    tcase_add_test(tc, test_human_wakes_first_agent);
    tcase_add_test(tc, test_agent_sender_wakes_the_next_agent);
    tcase_add_test(tc, test_other_bot_is_outside_the_order);
    tcase_add_test(tc, test_full_silent_cycle_goes_dormant);
    tcase_add_test(tc, test_author_is_not_asked_to_pass_on_its_own_message);
    tcase_add_test(tc, test_author_alone_left_ends_the_round);
    tcase_add_test(tc, test_silent_agents_are_skipped_until_a_real_message);
    tcase_add_test(tc, test_tool_only_turn_is_not_a_pass);
    tcase_add_test(tc, test_non_speaker_run_end_changes_no_turn);
    tcase_add_test(tc, test_timeout_loses_the_turn);
    tcase_add_test(tc, test_may_send_after_own_turn_ended);
    tcase_add_test(tc, test_human_mentions_restrict_the_turns);
    tcase_add_test(tc, test_mentioned_agents_all_passing_lifts_the_restriction);
    tcase_add_test(tc, test_loop_guard_rests_once_until_a_human);
    tcase_add_test(tc, test_moderator_never_wakes);
    tcase_add_test(tc, test_handoff_to_an_agent_that_consumed_the_message);
    tcase_add_test(tc, test_no_handoff_when_the_speaker_spoke_or_next_has_not_run);
    tcase_add_test(tc, test_discussion_idle_reminds_initiator_once_then_rests);
    tcase_add_test(tc, test_closed_channel_nothing_wakes);
    tcase_add_test(tc, test_single_agent_is_unmanaged);
    tcase_add_test(tc, test_removed_agent_is_skipped);
    tcase_add_test(tc, test_counting_to_eleven_in_turn);
    tcase_add_test(tc, test_late_message_of_a_passed_turn_is_old_news);
    tcase_add_test(tc, test_message_before_run_end_passes_the_turn);
    tcase_add_test(tc, test_swapped_run_ending_is_not_a_pass);
    tcase_add_test(tc, test_admin_words_and_names);
    suite_add_tcase(s, tc);
    return s;
}
