/*
 * config.h -- the plugin's validated configuration as plain structs.
 *
 * dg_config_parse() is the only place that reads the JSON config
 * (plugins.entries.dirigent.config); everything else reads this struct.
 * Every key, its type, range, default and whether it is required is one
 * entry of the key table (dg_config_keys): the parser walks it, and the
 * config suite checks manifest.json's configSchema and the reference in
 * docs/configuration.md against it, so a key is written down once.
 */
#ifndef DG_CONFIG_H
#define DG_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "chat.h" /* dg_platform */
#include "must_check.h"

typedef enum dg_session_policy { DG_POLICY_CHANNEL = 0, DG_POLICY_THREAD = 1 } dg_session_policy;

typedef struct dg_agent_cfg {
    char *agent_id;        /* key of `agents` */
    char *discord_user_id; /* snowflake; NULL: the agent is on Slack only */
    char *slack_user_id;   /* U... (upper case); NULL: the agent is on Discord only */
    char *role;            /* agents.<id>.role: one line the judge is shown; NULL: none */
    /* dg_map_hash of discord_user_id / slack_user_id (0 without one): every
     * message's sender is looked up among the agents by these first. */
    uint64_t discord_user_hash, slack_user_hash;
} dg_agent_cfg;

/* judge.source: who the chair asks who speaks next. */
typedef enum dg_judge_source {
    DG_JUDGE_NONE = 0,   /* today's order, nobody asked */
    DG_JUDGE_OPENAI = 1, /* an OpenAI-compatible endpoint the plugin calls itself */
    DG_JUDGE_HOST = 2    /* the host's decision models (ABI 1.2 decide) */
} dg_judge_source;

/* "none" / "openai" / "host". Static string. */
const char *dg_judge_source_name(dg_judge_source s);

/* What a budget counts and over which window. Windows are fixed UTC hours
 * and days; "per human message" counts from a scope's latest human message;
 * the discussion kinds count a discussion's whole life. */
typedef enum dg_budget_kind {
    DG_BUDGET_NONE = 0,
    DG_BUDGET_TURNS_PER_MESSAGE = 1, /* budget.turnsPerHumanMessage */
    DG_BUDGET_TOKENS_PER_MESSAGE = 2,
    DG_BUDGET_TURNS_PER_HOUR = 3,
    DG_BUDGET_TOKENS_PER_HOUR = 4,
    DG_BUDGET_TURNS_PER_DAY = 5,
    DG_BUDGET_TOKENS_PER_DAY = 6,
    DG_BUDGET_DISCUSSION_TURNS = 7, /* budget.discussionTurns */
    DG_BUDGET_DISCUSSION_TOKENS = 8,
    DG_BUDGET_KINDS
} dg_budget_kind;

/* Limits by kind; 0: no limit of that kind. A turn is a run that went to
 * the agent's own model; tokens are input plus output as the host reports
 * them. */
typedef struct dg_budget {
    long limit[DG_BUDGET_KINDS];
} dg_budget;

/* channelBudgets.<channelId>: limits that replace the default's for that
 * channel's scopes, kind by kind; -1: the default's. */
typedef struct dg_channel_budget {
    char *channel_id;
    dg_budget b;
} dg_channel_budget;

/* prices.<model>: what a million tokens cost (in the user's currency). */
typedef struct dg_price {
    char *model;
    double input_per_million, output_per_million;
} dg_price;

typedef struct dg_config {
    char *no_reply_provider; /* both NULL or both set: needed only on hosts */
    char *no_reply_model;    /* without claim hooks (dg_config_require_no_reply) */
    dg_session_policy session_policy;
    char *db_path;              /* absolute: config (relative: from path_base), else
                              * $DIRIGENT_STATE_DIR/dirigent.db, else <cwd>/dirigent.db */
    char *store_url;            /* PostgreSQL store (env DIRIGENT_STORE_URL, else store.url);
                              * NULL: the SQLite file db_path. NEVER logged: it may
                              * hold a password (dg_store_where names the store) */
    char *templates_dir;        /* absolute; NULL: built-in templates only */
    char *path_base;            /* folder relative paths were taken from (state_dir.h) */
    const char *path_base_from; /* static: where path_base came from, for the log */

    int has_discord;         /* the `discord` section is present */
    char *discord_api_base;  /* no trailing slash */
    char *discord_guild_id;  /* NULL when not configured (channel creation then refused) */
    char *moderator_token;   /* NULL when not configured; NEVER logged */
    char *moderator_user_id; /* Discord's; NULL without a `discord` section */
    long discord_timeout_ms;

    int has_slack;                 /* the `slack` section is present */
    char *slack_api_base;          /* no trailing slash; default $SLACK_API_URL, else
                                    * https://slack.com/api */
    char *slack_moderator_token;   /* env DIRIGENT_SLACK_MODERATOR_TOKEN (xoxb-) only;
                                    * NULL: the Slack moderator is silent; NEVER logged */
    char *slack_moderator_user_id; /* U... */
    long slack_timeout_ms;

    dg_agent_cfg *agents; /* sorted by agent_id */
    size_t n_agents;
    char **admins; /* snowflakes */
    size_t n_admins;

    long turn_timeout_sec;
    long turn_max_agent_messages;
    long turn_nudge_sec; /* turn.nudgeSec: mention a speaker whose run never
                                 * started after a message reached it; 0 = off */
    long max_guide_chars;
    long max_summary_bytes;
    long closed_notice_cooldown_sec;
    long reminder_after_sec;   /* discussion.reminderAfterSec: quiet-time reminder, 0 = off */
    long max_lifetime_sec;     /* discussion.maxLifetimeSec: wrap-up, then expiry; 0 = none */
    char *summary_dir;         /* discussion.summaryDir: normalised, relative to the
                                 * initiator's workspace, no trailing '/' */
    char *summary_template;    /* discussion.summaryTemplate: absolute path, NULL: none */
    long preview_chars;        /* discussion.previewChars: 0 = no preview */
    char *archive_channel_id;  /* discussion.archiveChannelId: snowflake, NULL: no index */
    long outbox_retention_sec; /* sent/failed outbox rows and closed-notice marks kept this long */

    dg_budget budget;                   /* budget.*: every managed scope's */
    dg_channel_budget *channel_budgets; /* sorted by channel_id */
    size_t n_channel_budgets;
    dg_price *prices; /* sorted by model */
    size_t n_prices;

    dg_judge_source judge_source; /* judge.source */
    char *judge_base_url;         /* judge.baseUrl (openai), no trailing '/' */
    char *judge_model;            /* judge.model (openai) */
    char *judge_api_key_env;      /* judge.apiKeyEnv: the variable holding the key; NULL: none */
    long judge_timeout_ms;        /* judge.timeoutMs: one question's bound */
    double judge_min_confidence;  /* judge.minConfidence: below it, today's hand-off */
} dg_config;

/* The JSON type of a key. A map is an object of caller-chosen keys whose
 * values share one shape (agents: agent id -> its entry, "agents.*.x"). */
typedef enum dg_config_key_type {
    DG_CFG_STRING,
    DG_CFG_INT,
    DG_CFG_NUMBER, /* read by its rule alone (judge.minConfidence) */
    DG_CFG_OBJECT,
    DG_CFG_MAP,
    DG_CFG_ARRAY
} dg_config_key_type;

struct dg_config_key;
/* The rule of a key beyond its type, run after the generic read whether the
 * key is present or not (v: its JSON value or NULL). DG_OK, or a negative
 * dg_status with a sentence naming the key in err. Thread: init only. */
typedef int (*dg_config_rule)(const struct dg_config_key *k, const json_t *v, dg_config *c,
                              char *err, size_t err_len);

#define DG_CFG_NO_FIELD ((size_t)-1)

/* One key of the config: the single description the parser, the manifest
 * check and the documentation check all read. */
typedef struct dg_config_key {
    const char *path; /* "discord.timeoutMs"; "agents.*.discordUserId": each agent's */
    dg_config_key_type type;
    int required;
    long min, max, def;  /* DG_CFG_INT: the range and the default */
    const char *def_str; /* DG_CFG_STRING: the default, NULL: none */
    size_t field;        /* offsetof in dg_config (char * or long), or DG_CFG_NO_FIELD
                                * when the rule stores the value itself */
    dg_config_rule rule; /* NULL: the type alone */
} dg_config_key;

/* The key table, in the order the parser reads the keys: a section's entry
 * comes before its own keys. Static; *n gets the number of entries. Any
 * thread. */
const dg_config_key *dg_config_keys(size_t *n);

/*
 * Parse and validate `json` (borrowed) into *out, applying defaults and the
 * environment overrides (DIRIGENT_SESSION_POLICY, DIRIGENT_MODERATOR_TOKEN,
 * DIRIGENT_STATE_DIR, OPENCLAW_CONFIG_PATH for relative paths: state_dir.h).
 * On failure returns a negative dg_status, writes a
 * sentence naming the key and the rule into err, and leaves *out zeroed.
 * On success *out owns its strings: release with dg_config_free().
 * Thread: init only.
 */
int dg_config_parse(const json_t *json, dg_config *out, char *err, size_t err_len) DG_MUST_CHECK;

/*
 * The no-reply pair on this host: a host with claim hooks (claim_hooks 1)
 * needs none; one without them swaps non-speakers to noReplyProvider /
 * noReplyModel, which must then be set. DG_OK, or DG_ERR_INVALID with a
 * sentence naming the fields in err. Any thread.
 */
int dg_config_require_no_reply(const dg_config *cfg, int claim_hooks, char *err,
                               size_t err_len) DG_MUST_CHECK;

/* Free what dg_config_parse allocated; safe on a zeroed struct. */
void dg_config_free(dg_config *cfg);

/* Where the operator sets platform's moderator token, for a message asking
 * them to fix it ("discord.moderatorToken (or env ...)"). Static; any
 * thread. */
const char *dg_config_token_home(dg_platform platform);

/* Agent by id / by Discord user id; borrowed pointers into cfg, NULL if none. */
const dg_agent_cfg *dg_config_agent(const dg_config *cfg, const char *agent_id);
/* The agent whose Discord or Slack user id is user_id, or NULL. */
const dg_agent_cfg *dg_config_agent_by_user(const dg_config *cfg, const char *user_id);

/* An agent's / the moderator's user id on platform (borrowed), NULL when
 * none is configured there. Any thread. */
const char *dg_config_agent_user(const dg_agent_cfg *a, dg_platform platform);
const char *dg_config_moderator_user(const dg_config *cfg, dg_platform platform);

/* 1 when user_id is the moderator's on either platform. */
int dg_config_is_moderator(const dg_config *cfg, const char *user_id);

/* "channel" / "thread". Static string. */
const char *dg_session_policy_name(dg_session_policy p);

/* The limits that hold in channel_id (NULL: the default's). */
void dg_config_budget_for(const dg_config *cfg, const char *channel_id, dg_budget *out);

/* The price of model, NULL when the table has none. */
const dg_price *dg_config_price(const dg_config *cfg, const char *model);

/* The key of a budget kind as the config spells it ("turnsPerHour"), and
 * what it counts in words ("agent turns in this hour"). Static strings. */
const char *dg_budget_key(dg_budget_kind k);
const char *dg_budget_words(dg_budget_kind k);


#endif
