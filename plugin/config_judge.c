/*
 * config_judge.c -- the judge's keys (judge.*) and an agent's role: which
 * judge the chair asks, where, within what bounds, and the one line each
 * agent is described by. The key itself never appears in the config, only
 * the name of the environment variable that holds it.
 */
#include "config_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "status.h"

/* The confidence below which an answer is not taken, when not given. */
#define DEFAULT_MIN_CONFIDENCE 0.5
/* The longest role: one line the judge is shown for each candidate. */
#define ROLE_MAX_BYTES 200

const char *dg_judge_source_name(dg_judge_source s)
{
    switch (s) {
    case DG_JUDGE_OPENAI: return "openai";
    case DG_JUDGE_HOST: return "host";
    default: return "none";
    }
}

static int http_url(const char *s)
{
    return s && (strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0) &&
           !strpbrk(s, " \t\r\n");
}

int dg_config_rule_judge_source(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                                size_t err_len)
{
    (void)k;
    const char *s = v ? json_string_value(v) : "none";
    if (strcmp(s, "none") == 0)
        c->judge_source = DG_JUDGE_NONE;
    else if (strcmp(s, "openai") == 0)
        c->judge_source = DG_JUDGE_OPENAI;
    else if (strcmp(s, "host") == 0)
        c->judge_source = DG_JUDGE_HOST;
    else
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"judge.source\" must be \"none\" (today's order), \"openai\" "
                       "(an OpenAI-compatible endpoint: judge.baseUrl, judge.model) or \"host\" "
                       "(the host's decision models), got \"%.40s\"",
                       s);
    if (c->judge_source != DG_JUDGE_OPENAI)
        return DG_OK;
    if (!http_url(c->judge_base_url))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"judge.baseUrl\" must be an http:// or https:// URL without "
                       "spaces (the endpoint's base, e.g. \"http://127.0.0.1:8080/v1\") when "
                       "judge.source is \"openai\"");
    if (!c->judge_model || !*c->judge_model)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"judge.model\" must name the model when judge.source is "
                       "\"openai\"");
    size_t n = strlen(c->judge_base_url);
    while (n > 0 && c->judge_base_url[n - 1] == '/')
        c->judge_base_url[--n] = '\0';
    return DG_OK;
}

int dg_config_rule_judge_key_env(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                                 size_t err_len)
{
    (void)k;
    (void)v;
    const char *s = c->judge_api_key_env;
    if (!s)
        return DG_OK;
    int ok = (isupper((unsigned char)s[0]) || s[0] == '_') && strlen(s) <= 128;
    for (const char *q = s; ok && *q; q++)
        ok = isupper((unsigned char)*q) || isdigit((unsigned char)*q) || *q == '_';
    if (!ok)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"judge.apiKeyEnv\" must be the name of an environment variable "
                       "(A-Z, 0-9, _; not starting with a digit; at most 128), e.g. "
                       "\"DIRIGENT_JUDGE_KEY\"; the key itself never goes in the config");
    return DG_OK;
}

int dg_config_rule_judge_confidence(const dg_config_key *k, const json_t *v, dg_config *c,
                                    char *err, size_t err_len)
{
    (void)k;
    c->judge_min_confidence = DEFAULT_MIN_CONFIDENCE;
    if (!v)
        return DG_OK;
    double d = json_number_value(v);
    if (!json_is_number(v) || !isfinite(d) || d < 0 || d > 1)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"judge.minConfidence\" must be a number in 0..1 (an answer "
                       "below it falls back to today's hand-off)");
    c->judge_min_confidence = d;
    return DG_OK;
}

int dg_config_agent_role(const json_t *agent, const char *path, char **out, char *err,
                         size_t err_len)
{
    const json_t *v = json_object_get(agent, "role");
    *out = NULL;
    if (!v)
        return DG_OK;
    const char *s = json_string_value(v);
    if (!s || !*s || strlen(s) > ROLE_MAX_BYTES || strpbrk(s, "\r\n"))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"%s\" must be one line of text (1-%d bytes, no line break): "
                       "what the agent is for, shown to the judge",
                       path, ROLE_MAX_BYTES);
    if (!(*out = strdup(s)))
        return DG_ERR_NOMEM;
    return DG_OK;
}
