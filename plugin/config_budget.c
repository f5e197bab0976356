/*
 * config_budget.c -- the budget keys' parts that the key table cannot say
 * alone: channelBudgets (a map of channel ids to partial budgets), prices
 * (a map of model names to prices per million tokens), and the lookups
 * the turn engine and the commands use.
 */
#include "config_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "snowflake.h"
#include "status.h"

static const char *const KEY_NAMES[DG_BUDGET_KINDS] = {
    [DG_BUDGET_TURNS_PER_MESSAGE] = "turnsPerHumanMessage",
    [DG_BUDGET_TOKENS_PER_MESSAGE] = "tokensPerHumanMessage",
    [DG_BUDGET_TURNS_PER_HOUR] = "turnsPerHour",
    [DG_BUDGET_TOKENS_PER_HOUR] = "tokensPerHour",
    [DG_BUDGET_TURNS_PER_DAY] = "turnsPerDay",
    [DG_BUDGET_TOKENS_PER_DAY] = "tokensPerDay",
    [DG_BUDGET_DISCUSSION_TURNS] = "discussionTurns",
    [DG_BUDGET_DISCUSSION_TOKENS] = "discussionTokens",
};

static const char *const WORDS[DG_BUDGET_KINDS] = {
    [DG_BUDGET_TURNS_PER_MESSAGE] = "agent turns since the last human message",
    [DG_BUDGET_TOKENS_PER_MESSAGE] = "tokens since the last human message",
    [DG_BUDGET_TURNS_PER_HOUR] = "agent turns in this hour (UTC)",
    [DG_BUDGET_TOKENS_PER_HOUR] = "tokens in this hour (UTC)",
    [DG_BUDGET_TURNS_PER_DAY] = "agent turns today (UTC)",
    [DG_BUDGET_TOKENS_PER_DAY] = "tokens today (UTC)",
    [DG_BUDGET_DISCUSSION_TURNS] = "agent turns in this discussion",
    [DG_BUDGET_DISCUSSION_TOKENS] = "tokens in this discussion",
};

const char *dg_budget_key(dg_budget_kind k)
{
    return k > DG_BUDGET_NONE && k < DG_BUDGET_KINDS ? KEY_NAMES[k] : "none";
}

const char *dg_budget_words(dg_budget_kind k)
{
    return k > DG_BUDGET_NONE && k < DG_BUDGET_KINDS ? WORDS[k] : "nothing";
}

/* The largest limit a key takes: a billion turns or tokens is no limit a
 * user means, and keeps sums far from overflow. */
#define LIMIT_MAX 1000000000L

static int cmp_channel_budget(const void *a, const void *b)
{
    return strcmp(((const dg_channel_budget *)a)->channel_id,
                  ((const dg_channel_budget *)b)->channel_id);
}

/* One entry of channelBudgets: the per-window kinds only (a discussion
 * channel is made at run time and takes budget.discussion*). */
static int parse_channel_budget(const char *id, const json_t *val, dg_channel_budget *cb, char *err,
                                size_t err_len)
{
    if (!dg_snowflake_valid(id))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"channelBudgets\" key \"%.40s\" must be a Discord channel id "
                       "(a snowflake of 1-20 digits)",
                       id);
    if (!json_is_object(val))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"channelBudgets.%s\" must be an object like "
                       "{\"turnsPerHour\": 60}",
                       id);
    for (int k = 0; k < DG_BUDGET_KINDS; k++)
        cb->b.limit[k] = -1;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)val, key, v) {
        int kind = DG_BUDGET_NONE;
        for (int k = 1; k < DG_BUDGET_DISCUSSION_TURNS && !kind; k++)
            if (strcmp(key, KEY_NAMES[k]) == 0)
                kind = k;
        if (!kind)
            return dg_fail(err, err_len, DG_ERR_INVALID,
                           "config: unknown key \"channelBudgets.%s.%.64s\"; a channel takes "
                           "turnsPerHumanMessage, tokensPerHumanMessage, turnsPerHour, "
                           "tokensPerHour, turnsPerDay and tokensPerDay",
                           id, key);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > LIMIT_MAX)
            return dg_fail(err, err_len, DG_ERR_INVALID,
                           "config: \"channelBudgets.%s.%s\" must be an integer between 0 (no "
                           "limit in this channel) and %ld",
                           id, key, LIMIT_MAX);
        cb->b.limit[kind] = (long)json_integer_value(v);
    }
    return (cb->channel_id = strdup(id)) ? DG_OK : DG_ERR_NOMEM;
}

int dg_config_rule_channel_budgets(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                                   size_t err_len)
{
    (void)k;
    size_t n = json_object_size(v);
    if (n == 0)
        return DG_OK;
    if (!(c->channel_budgets = calloc(n, sizeof *c->channel_budgets)))
        return DG_ERR_NOMEM;
    const char *id;
    json_t *val;
    json_object_foreach((json_t *)v, id, val) {
        int rc =
            parse_channel_budget(id, val, &c->channel_budgets[c->n_channel_budgets], err, err_len);
        if (c->channel_budgets[c->n_channel_budgets].channel_id)
            c->n_channel_budgets++;
        if (rc)
            return rc;
    }
    qsort(c->channel_budgets, c->n_channel_budgets, sizeof *c->channel_budgets, cmp_channel_budget);
    return DG_OK;
}

static int cmp_price(const void *a, const void *b)
{
    return strcmp(((const dg_price *)a)->model, ((const dg_price *)b)->model);
}

static int price_value(const json_t *obj, const char *model, const char *key, double *out,
                       char *err, size_t err_len)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0 ||
        json_number_value(v) > 1e6)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"prices.%.128s.%s\" is required: the price of a million %s "
                       "tokens, a number from 0 to 1000000",
                       model, key, strcmp(key, "inputPerMillion") == 0 ? "input" : "output");
    *out = json_number_value(v);
    return DG_OK;
}

static int parse_price(const char *model, const json_t *val, dg_price *pr, char *err,
                       size_t err_len)
{
    static const char *const allowed[] = {"inputPerMillion", "outputPerMillion", NULL};
    if (!*model || strlen(model) > 200)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: a \"prices\" key must be a model name of 1-200 characters, as "
                       "the host reports it (e.g. \"anthropic/claude-sonnet-4\")");
    if (!json_is_object(val))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"prices.%.128s\" must be an object like {\"inputPerMillion\": "
                       "3, \"outputPerMillion\": 15}",
                       model);
    const char *bad = dg_json_unknown_key(val, allowed);
    if (bad)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: unknown key \"prices.%.128s.%.64s\"; a price takes "
                       "inputPerMillion and outputPerMillion",
                       model, bad);
    int rc = price_value(val, model, "inputPerMillion", &pr->input_per_million, err, err_len);
    if (rc == DG_OK)
        rc = price_value(val, model, "outputPerMillion", &pr->output_per_million, err, err_len);
    if (rc == DG_OK && !(pr->model = strdup(model)))
        rc = DG_ERR_NOMEM;
    return rc;
}

int dg_config_rule_prices(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                          size_t err_len)
{
    (void)k;
    size_t n = json_object_size(v);
    if (n == 0)
        return DG_OK;
    if (!(c->prices = calloc(n, sizeof *c->prices)))
        return DG_ERR_NOMEM;
    const char *model;
    json_t *val;
    json_object_foreach((json_t *)v, model, val) {
        int rc = parse_price(model, val, &c->prices[c->n_prices], err, err_len);
        if (c->prices[c->n_prices].model)
            c->n_prices++;
        if (rc)
            return rc;
    }
    qsort(c->prices, c->n_prices, sizeof *c->prices, cmp_price);
    return DG_OK;
}

void dg_config_budget_free(dg_config *c)
{
    for (size_t i = 0; i < c->n_channel_budgets; i++)
        free(c->channel_budgets[i].channel_id);
    free(c->channel_budgets);
    for (size_t i = 0; i < c->n_prices; i++)
        free(c->prices[i].model);
    free(c->prices);
}

void dg_config_budget_for(const dg_config *cfg, const char *channel_id, dg_budget *out)
{
    *out = cfg->budget;
    if (!channel_id || !cfg->n_channel_budgets)
        return;
    dg_channel_budget key = {.channel_id = (char *)channel_id};
    const dg_channel_budget *cb =
        bsearch(&key, cfg->channel_budgets, cfg->n_channel_budgets, sizeof key, cmp_channel_budget);
    for (int k = 1; cb && k < DG_BUDGET_KINDS; k++)
        if (cb->b.limit[k] >= 0)
            out->limit[k] = cb->b.limit[k];
}

const dg_price *dg_config_price(const dg_config *cfg, const char *model)
{
    if (!model || !cfg->n_prices)
        return NULL;
    dg_price key = {.model = (char *)model};
    return bsearch(&key, cfg->prices, cfg->n_prices, sizeof key, cmp_price);
}
