/*
 * turns_judge.h -- the turn engine's side of the judge (judge_plugin.h):
 * when a change moves the turn by the order, the judge is asked instead
 * (turns_judge_intercept, from the one place every change's moderator
 * messages are queued), the scope's runs are claimed while it decides, and
 * its verdict is applied under the engine's writer (dg_turns_judge_apply).
 * Mentions and admin commands are never asked about: they decide.
 */
#ifndef DG_TURNS_JUDGE_H
#define DG_TURNS_JUDGE_H

#include "turns_int.h"
#include "judge_plugin.h"
#include "must_check.h"

/* The reason a run is claimed with while its scope is being decided. */
#define TURNS_JUDGE_REASON "the chair is deciding who speaks next"

/*
 * Called where a change of scope r (from r->st to *next) queues what it
 * owes: when the change moved the turn to the next agent by the order (not
 * a mention, not a budget, a normal channel, a choice left), the judge is
 * asked and the hand-off in *fx is dropped (the verdict brings its own).
 * A change that left the scope without a turn to decide (asleep, a
 * mention, a budget) drops an open question. No-op without a judge.
 * DG_OK or DG_ERR_NOMEM (then nothing is asked and fx is unchanged).
 * Writer held.
 */
int turns_judge_intercept(dg_turns *t, turns_scope *r, dg_rule_effects *fx,
                          dg_turn_state *next) DG_MUST_CHECK;

/* 1 while r is being decided: its agents' runs are claimed with no effect
 * on the turn. Mirror lock or writer held. */
int turns_judge_deciding(dg_turns *t, const turns_scope *r);

/* Message m of sender kind (member pos) in scope r, for the evidence. */
void turns_judge_note(dg_turns *t, const turns_scope *r, const dg_turn_message *m,
                      dg_sender_kind kind, int pos);

/* The status line of the judge for scope r ("judge: openai (...)", with
 * "deciding who speaks next now" while it does) into buf; returns buf. */
const char *turns_judge_status(const dg_turns *t, const turns_scope *r, char *buf, size_t cap);

/* A change chosen by a person (an admin command) drops an open question
 * of r: its verdict would undo the choice. */
void turns_judge_overruled(dg_turns *t, const turns_scope *r);

/*
 * The verdict res applied to its scope (ud: the dg_turns), in one
 * transaction: the chosen agent gets the turn with a hand-off, "nobody"
 * ends the round (unless a human message waits for an agent: then today's
 * order), a fallback hands the turn on by today's order; the transitions
 * log says which ("judge chose reviewer, p 0.82"). A verdict whose
 * question is no longer open (the turn moved on) changes nothing. DG_OK or
 * a negative status. The judge's worker thread.
 */
int dg_turns_judge_apply(void *ud, const dg_judge_result *res);

#endif
