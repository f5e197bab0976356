/*
 * config_int.h -- what config.c's key table takes from config_budget.c.
 */
#ifndef DG_CONFIG_INT_H
#define DG_CONFIG_INT_H

#include "config.h"
#include "json_keys.h"

/* Rules of the map keys channelBudgets and prices (dg_config_rule). */
int dg_config_rule_channel_budgets(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                                   size_t err_len);
int dg_config_rule_prices(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                          size_t err_len);

/* Rules of the judge's keys (config_judge.c): judge.source with what it
 * needs, judge.minConfidence; an agent's role (path: "agents.<id>.role"). */
int dg_config_rule_judge_source(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                                size_t err_len);
int dg_config_rule_judge_confidence(const dg_config_key *k, const json_t *v, dg_config *c,
                                    char *err, size_t err_len);
int dg_config_rule_judge_key_env(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                                 size_t err_len);
int dg_config_agent_role(const json_t *agent, const char *path, char **out, char *err,
                         size_t err_len);

/* Frees what those rules allocated (dg_config_free calls it). */
void dg_config_budget_free(dg_config *c);

#endif
