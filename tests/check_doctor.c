/*
 * check_doctor.c -- `dirigent-ctl doctor --openclaw-config FILE` as a
 * process against the fake Discord on loopback: one test per finding
 * (the moderator's token missing, refused, another user's; an agent's
 * token of another user; a channel an agent cannot see; the moderator
 * without Manage Channels; dbPath unwritable or another application's
 * database; hooks.allowConversationAccess missing; the no-reply pair on a
 * host without claim hooks; the plugin's own validation; ${VAR}s), the
 * exit status, and that no token is ever printed.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_discord.h"
#include "fake_slack.h"
#include "testutil.h"

#define MOD_ID "200000000000000001"
#define PLANNER_ID "200000000000000002"
#define REVIEWER_ID "200000000000000003"
#define CODER_ID "200000000000000004"
#define GENERAL "300000000000000001"
#define MOD_ROLE "700000000000000001"
#define TOK_MOD "TOKMODxxxxxxxxxxxxxxxxxx.GmodAA.modsecretmodsecretmodsecret00"
#define TOK_PLANNER "TOKPLANNERxxxxxxxxxxxxxx.GplaAA.plannersecretplannersecret0"
#define TOK_REVIEWER "TOKREVIEWERxxxxxxxxxxxxx.GrevAA.reviewersecretreviewersecre"
#define TOK_CODER "TOKCODERxxxxxxxxxxxxxxxx.GcodAA.codersecretcodersecretcoder00"
#define PERM_MANAGE_CHANNELS (1ull << 4)
#define PERM_MANAGE_ROLES (1ull << 28)
#define PERM_VIEW (1ull << 10)

static fake_discord *FD;
static char *DIR_;
static char *CONF;
static const char *TOKENS[] = {TOK_MOD, TOK_PLANNER, TOK_REVIEWER, TOK_CODER};

static void setup(void)
{
    char err[256];
    ck_assert_int_eq(fake_discord_start(NULL, &FD, err, sizeof err), 0);
    ck_assert_int_eq(fake_discord_add_user(FD, TOK_MOD, MOD_ID, "moderator", 1), 0);
    ck_assert_int_eq(fake_discord_add_user(FD, TOK_PLANNER, PLANNER_ID, "planner", 1), 0);
    ck_assert_int_eq(fake_discord_add_user(FD, TOK_REVIEWER, REVIEWER_ID, "reviewer", 1), 0);
    ck_assert_int_eq(fake_discord_add_user(FD, TOK_CODER, CODER_ID, "coder", 1), 0);
    ck_assert_int_eq(
        fake_discord_add_role(FD, MOD_ROLE, "dirigent", PERM_MANAGE_CHANNELS | PERM_MANAGE_ROLES),
        0);
    ck_assert_int_eq(fake_discord_grant_role(FD, MOD_ID, MOD_ROLE), 0);
    ck_assert_int_eq(fake_discord_add_channel(FD, GENERAL, "general", NULL), 0);
    DIR_ = tu_mkdtemp();
    CONF = tu_path(DIR_, "openclaw.json");
    setenv("DIRIGENT_MODERATOR_TOKEN", TOK_MOD, 1);
    setenv("PLANNER_BOT_TOKEN", TOK_PLANNER, 1);
    setenv("REVIEWER_BOT_TOKEN", TOK_REVIEWER, 1);
    setenv("CODER_BOT_TOKEN", TOK_CODER, 1);
    setenv("MODERATOR_USER_ID", MOD_ID, 1);
    setenv("DISCORD_GUILD_ID", fake_discord_guild_id(FD), 1);
    unsetenv("OPENCLAW_CONFIG_PATH");
    unsetenv("DIRIGENT_STORE_URL");
    unsetenv("DIRIGENT_STATE_DIR");
}

static void teardown(void)
{
    fake_discord_stop(FD);
    tu_rmtree(DIR_);
    free(DIR_);
    free(CONF);
}

/* The README's config against the fake; hooks and plugin-config text can
 * be replaced (NULL: the README's). */
static void write_config(const char *hooks, const char *extra_plugin_keys, const char *db)
{
    char *text = NULL;
    char *dbp = db ? strdup(db) : tu_path(DIR_, "state/dirigent.db");
    ck_assert_int_ge(
        asprintf(
            &text,
            "{\"bindings\":["
            "{\"agentId\":\"planner\",\"match\":{\"channel\":\"discord\",\"accountId\":\"planner\"}"
            "},"
            "{\"agentId\":\"reviewer\",\"match\":{\"channel\":\"discord\",\"accountId\":"
            "\"reviewer\"}},"
            "{\"agentId\":\"coder\",\"match\":{\"channel\":\"discord\",\"accountId\":\"coder\"}}],"
            "\"channels\":{\"discord\":{\"enabled\":true,\"allowBots\":true,"
            "\"accounts\":{\"planner\":{\"token\":\"${PLANNER_BOT_TOKEN}\"},"
            "\"reviewer\":{\"token\":\"${REVIEWER_BOT_TOKEN}\"},"
            "\"coder\":{\"token\":\"${CODER_BOT_TOKEN}\"}}}},"
            "\"plugins\":{\"entries\":{\"dirigent\":{\"enabled\":true,\"hooks\":%s,"
            "\"config\":{%s\"dbPath\":\"%s\",\"discord\":{\"apiBase\":\"%s\","
            "\"guildId\":\"${DISCORD_GUILD_ID}\",\"moderatorUserId\":\"${MODERATOR_USER_ID}\"},"
            "\"agents\":{\"planner\":{\"discordUserId\":\"" PLANNER_ID "\"},"
            "\"reviewer\":{\"discordUserId\":\"" REVIEWER_ID "\"},"
            "\"coder\":{\"discordUserId\":\"" CODER_ID "\"}}}}}}}",
            hooks ? hooks : "{\"allowConversationAccess\":true,\"allowPromptInjection\":true}",
            extra_plugin_keys ? extra_plugin_keys : "", dbp, fake_discord_url(FD)),
        0);
    ck_assert_int_eq(tu_write_file(CONF, text), 0);
    free(text);
    free(dbp);
}

/* Run the doctor; its exit status, stdout into *out (caller frees). No
 * token ever appears in what it prints (stdout or stderr). */
static int doctor(char **out, const char *version, const char *json)
{
    char *bin = tu_path(tu_build_dir(), "dirigent-ctl");
    char *outp = tu_path(DIR_, "doctor.out"), *errp = tu_path(DIR_, "doctor.err");
    const char *argv[] = {bin,
                          "doctor",
                          "--openclaw-config",
                          CONF,
                          "--openclaw-version",
                          version ? version : "2026.9.6",
                          json,
                          NULL};
    int st = tu_run_wait(argv, outp, errp, NULL, 60000);
    const char *paths[] = {outp, errp};
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen(paths[k], "r");
        ck_assert_ptr_nonnull(f);
        char *text = calloc(1, 1 << 20);
        size_t n = fread(text, 1, (1 << 20) - 1, f);
        text[n] = '\0';
        fclose(f);
        for (size_t t = 0; t < sizeof TOKENS / sizeof TOKENS[0]; t++)
            ck_assert_msg(!strstr(text, TOKENS[t]) && !strstr(text, strchr(TOKENS[t], '.')),
                          "a token was printed: %s", text);
        if (k == 0)
            *out = text;
        else
            free(text);
    }
    free(bin);
    free(outp);
    free(errp);
    return st;
}

/* The line of out that starts with level and holds needle, or fail. */
static void has_line(const char *out, const char *level, const char *needle)
{
    for (const char *l = out; l && *l;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        char *line = strndup(l, len);
        int hit = !strncmp(line, level, strlen(level)) && line[strlen(level)] == ' ' &&
                  strstr(line, needle);
        free(line);
        if (hit)
            return;
        l = end ? end + 1 : NULL;
    }
    ck_abort_msg("no \"%s\" line with \"%s\" in:\n%s", level, needle, out);
}

START_TEST(test_a_good_config_has_no_error)
{
    write_config(NULL, NULL, NULL);
    char *out = NULL;
    ck_assert_int_eq(doctor(&out, NULL, NULL), 0);
    has_line(out, "ok",
             "moderator: the token of env DIRIGENT_MODERATOR_TOKEN is valid and "
             "belongs to bot moderator (" MOD_ID ")");
    has_line(out, "ok", "planner: the token of channels.discord.accounts.planner.token is valid");
    has_line(out, "ok", "plugin config: valid (the plugin's own validation): 3 agents");
    has_line(out, "ok",
             "channel #general (" GENERAL "): the moderator and 3 agents (coder, "
             "planner, reviewer) can read and send");
    has_line(out, "ok", "discussions: the moderator has Manage Channels and Manage Roles");
    has_line(out, "ok", "hooks.allowConversationAccess is true");
    has_line(out, "ok", "OpenClaw 2026.9.6 has the claim hooks");
    has_line(out, "ok", "no-reply provider: none configured, none needed (claim hooks)");
    has_line(out, "ok", "does not exist yet; it is created at the first start");
    ck_assert_ptr_nonnull(strstr(out, "0 errors, 0 warnings\n"));
    free(out);
    /* --json: the same findings as one object. */
    ck_assert_int_eq(doctor(&out, NULL, "--json"), 0);
    json_t *j = tu_json(out);
    ck_assert(json_is_true(json_object_get(j, "ok")));
    ck_assert_int_eq(json_integer_value(json_object_get(j, "errors")), 0);
    ck_assert_int_ge(json_array_size(json_object_get(j, "findings")), 8);
    json_decref(j);
    free(out);
    /* Nothing was created: the doctor only looks. */
    char *state = tu_path(DIR_, "state");
    struct stat sb;
    ck_assert_int_ne(stat(state, &sb), 0);
    free(state);
}
END_TEST

START_TEST(test_missing_moderator_token)
{
    write_config(NULL, NULL, NULL);
    unsetenv("DIRIGENT_MODERATOR_TOKEN");
    char *out = NULL;
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    has_line(out, "error",
             "moderator: no Discord token (discord.moderatorToken / env "
             "DIRIGENT_MODERATOR_TOKEN is not set); fix: export DIRIGENT_MODERATOR_TOKEN");
    has_line(out, "warn", "channels and permissions: not checked");
    free(out);
}
END_TEST

START_TEST(test_wrong_moderator_token)
{
    write_config(NULL, NULL, NULL);
    setenv("DIRIGENT_MODERATOR_TOKEN",
           "TOKWRONGxxxxxxxxxxxxxxxx.GwroAA.wrongsecretwrongsecretwrong", 1);
    char *out = NULL;
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    has_line(out, "error",
             "moderator: Discord refuses the token of env "
             "DIRIGENT_MODERATOR_TOKEN (401 Unauthorized)");
    ck_assert_ptr_null(strstr(out, "wrongsecret"));
    free(out);
}
END_TEST

START_TEST(test_moderator_token_of_another_user)
{
    write_config(NULL, NULL, NULL);
    setenv("DIRIGENT_MODERATOR_TOKEN", TOK_PLANNER, 1);
    char *out = NULL;
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    has_line(out, "error",
             "moderator: the token of env DIRIGENT_MODERATOR_TOKEN belongs to "
             "planner (" PLANNER_ID "), not to the configured user " MOD_ID);
    free(out);
}
END_TEST

START_TEST(test_agent_token_of_another_user)
{
    write_config(NULL, NULL, NULL);
    setenv("CODER_BOT_TOKEN", TOK_REVIEWER, 1);
    char *out = NULL;
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    has_line(out, "error",
             "coder: the token of channels.discord.accounts.coder.token belongs "
             "to reviewer (" REVIEWER_ID "), not to the configured user " CODER_ID);
    has_line(out, "ok",
             "reviewer: the token of channels.discord.accounts.reviewer.token is "
             "valid");
    free(out);
}
END_TEST

static void deny_view(const char *const *users, size_t n)
{
    json_t *ows = json_array();
    char deny[24];
    snprintf(deny, sizeof deny, "%llu", (unsigned long long)PERM_VIEW);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(ows, json_pack("{s:s,s:i,s:s,s:s}", "id", users[i], "type", 1,
                                             "allow", "0", "deny", deny));
    ck_assert_int_eq(fake_discord_set_overwrites(FD, GENERAL, ows), 0);
    json_decref(ows);
}

START_TEST(test_channel_not_visible_to_an_agent)
{
    write_config(NULL, NULL, NULL);
    const char *coder[] = {CODER_ID};
    deny_view(coder, 1);
    char *out = NULL;
    ck_assert_int_eq(doctor(&out, NULL, NULL), 0);
    has_line(out, "warn",
             "channel #general (" GENERAL "): planner, reviewer can read and "
             "send; coder (no View Channel) never takes a turn there");
    free(out);
    /* Two agents hidden: turns need two. */
    const char *two[] = {CODER_ID, REVIEWER_ID};
    deny_view(two, 2);
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    has_line(out, "error",
             "channel #general (" GENERAL "): 1 agent can read and send there "
             "(planner), turns need two; coder (no View Channel), reviewer (no View Channel)");
    free(out);
    /* The moderator hidden. */
    const char *mod[] = {MOD_ID};
    deny_view(mod, 1);
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    has_line(out, "error",
             "channel #general (" GENERAL "): the moderator cannot post there "
             "(no View Channel)");
    free(out);
}
END_TEST

START_TEST(test_moderator_without_manage_channels)
{
    fake_discord_stop(FD);
    char err[256];
    ck_assert_int_eq(fake_discord_start(NULL, &FD, err, sizeof err), 0);
    ck_assert_int_eq(fake_discord_add_user(FD, TOK_MOD, MOD_ID, "moderator", 1), 0);
    ck_assert_int_eq(fake_discord_add_user(FD, TOK_PLANNER, PLANNER_ID, "planner", 1), 0);
    ck_assert_int_eq(fake_discord_add_user(FD, TOK_REVIEWER, REVIEWER_ID, "reviewer", 1), 0);
    ck_assert_int_eq(fake_discord_add_user(FD, TOK_CODER, CODER_ID, "coder", 1), 0);
    ck_assert_int_eq(fake_discord_add_role(FD, MOD_ROLE, "dirigent", PERM_MANAGE_ROLES), 0);
    ck_assert_int_eq(fake_discord_grant_role(FD, MOD_ID, MOD_ROLE), 0);
    ck_assert_int_eq(fake_discord_add_channel(FD, GENERAL, "general", NULL), 0);
    setenv("DISCORD_GUILD_ID", fake_discord_guild_id(FD), 1);
    write_config(NULL, NULL, NULL);
    char *out = NULL;
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    has_line(out, "error", "discussions: the moderator lacks Manage Channels in guild");
    free(out);
}
END_TEST

START_TEST(test_db_path_unwritable)
{
    /* Under a file: no folder can be made there (root passes every
     * permission test, a file in the way stops it too). */
    char *file = tu_path(DIR_, "afile");
    ck_assert_int_eq(tu_write_file(file, "x"), 0);
    char *db = tu_path(file, "dirigent.db");
    write_config(NULL, NULL, db);
    char *out = NULL;
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    char want[1024];
    snprintf(want, sizeof want, "database: dbPath %s: %s is not a folder", db, file);
    has_line(out, "error", want);
    free(out);
    free(db);
    if (geteuid() != 0) {
        char *ro = tu_path(DIR_, "ro");
        ck_assert_int_eq(mkdir(ro, 0500), 0);
        db = tu_path(ro, "dirigent.db");
        write_config(NULL, NULL, db);
        ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
        has_line(out, "error", "cannot be created");
        free(out);
        free(db);
        free(ro);
    }
    free(file);
}
END_TEST

START_TEST(test_db_path_of_another_application)
{
    char *db = tu_path(DIR_, "other.db");
    sqlite3 *s = NULL;
    ck_assert_int_eq(sqlite3_open(db, &s), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(s,
                                  "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"
                                  "INSERT INTO notes (body) VALUES ('mine');",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(s);
    write_config(NULL, NULL, db);
    char *out = NULL;
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    char want[1024];
    snprintf(want, sizeof want,
             "database: dbPath %s holds another application's data, not "
             "dirigent's (a SQLite database without the plugin's stamp and tables)",
             db);
    has_line(out, "error", want);
    free(out);
    /* Another file altogether. */
    ck_assert_int_eq(tu_write_file(db, "just some text, not a database at all\n"), 0);
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    has_line(out, "error",
             "holds another application's data, not dirigent's (not a SQLite "
             "database)");
    free(out);
    free(db);
}
END_TEST

START_TEST(test_allow_conversation_access_missing)
{
    write_config("{\"allowPromptInjection\":true}", NULL, NULL);
    char *out = NULL;
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    has_line(out, "error",
             "plugins.entries.dirigent.hooks.allowConversationAccess is not true: "
             "OpenClaw runs no typed hook");
    free(out);
}
END_TEST

START_TEST(test_no_reply_pair_on_a_host_without_claim_hooks)
{
    write_config(NULL, NULL, NULL);
    char *out = NULL;
    ck_assert_int_eq(doctor(&out, "2026.8.2", NULL), 1);
    has_line(out, "warn", "OpenClaw 2026.8.2 has no claim hooks");
    has_line(out, "error", "\"noReplyProvider\" and \"noReplyModel\" are required on this host");
    free(out);
    /* Configured, on that host: the provider must be in models.providers. */
    write_config(NULL, "\"noReplyProvider\":\"noreply\",\"noReplyModel\":\"no-reply\",", NULL);
    ck_assert_int_eq(doctor(&out, "2026.8.2", NULL), 1);
    has_line(out, "error",
             "no-reply provider: noReplyProvider \"noreply\" is not in "
             "models.providers");
    free(out);
    /* On a host with claim hooks it is not contacted. */
    ck_assert_int_eq(doctor(&out, NULL, NULL), 0);
    has_line(out, "ok", "no-reply provider: \"noreply\" is configured but never used");
    free(out);
}
END_TEST

START_TEST(test_plugin_validation_and_unset_variables)
{
    write_config(NULL, "\"turn\":{\"timeoutSec\":0},", NULL);
    char *out = NULL;
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    has_line(out, "error", "plugin config: config: \"turn.timeoutSec\"");
    free(out);
    write_config(NULL, NULL, NULL);
    unsetenv("REVIEWER_BOT_TOKEN");
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    has_line(out, "warn",
             "config: ${REVIEWER_BOT_TOKEN} (in channels.discord.accounts.reviewer."
             "token) is not set in this environment");
    has_line(out, "error",
             "reviewer: no Discord token (channels.discord.accounts.reviewer."
             "token names a variable that is not set)");
    free(out);
}
END_TEST

/* Replace the first `from` in the config file with `to`. */
static void edit_config(const char *from, const char *to)
{
    FILE *f = fopen(CONF, "r");
    ck_assert_ptr_nonnull(f);
    char *text = calloc(1, 1 << 16);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    fclose(f);
    text[n] = '\0';
    char *at = strstr(text, from);
    ck_assert_msg(at != NULL, "no %s in the config", from);
    char *edited = NULL;
    ck_assert_int_ge(asprintf(&edited, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from)),
                     0);
    ck_assert_int_eq(tu_write_file(CONF, edited), 0);
    free(edited);
    free(text);
}

/* An example's placeholder left as a key or a value is an error, found
 * offline (the API is not reachable here at all). */
START_TEST(test_placeholders_are_errors_offline)
{
    write_config(NULL, NULL, NULL);
    edit_config("\"channels\":{\"discord\":{",
                "\"channels\":{\"discord\":{\"guilds\":{\"YOUR_GUILD_ID\":{\"requireMention\":"
                "false}},");
    edit_config("\"enabled\":true,\"allowBots\"", "\"enabled\":true,\"note\":\"<your-name>\","
                                                  "\"allowBots\"");
    edit_config(fake_discord_url(FD), "http://127.0.0.1:1/api/v10");
    char *out = NULL;
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    has_line(out, "error",
             "config: channels.discord.guilds has the key \"YOUR_GUILD_ID\", a placeholder; "
             "fix: write your server's id there");
    has_line(out, "error", "config: channels.discord.note is \"<your-name>\", a placeholder");
    free(out);
}
END_TEST

/* A Discord host that does not resolve is the network's fault (DNS,
 * proxy), not the token's. */
START_TEST(test_an_unresolvable_host_is_the_networks_fault)
{
    const char *proxies[] = {"http_proxy",  "HTTP_PROXY", "https_proxy",
                             "HTTPS_PROXY", "all_proxy",  "ALL_PROXY"};
    for (size_t i = 0; i < sizeof proxies / sizeof *proxies; i++)
        unsetenv(proxies[i]);
    write_config(NULL, NULL, NULL);
    edit_config(fake_discord_url(FD), "http://dirigent-doctor.invalid/api/v10");
    char *out = NULL;
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    has_line(out, "error", "Discord: cannot resolve dirigent-doctor.invalid (discord.apiBase");
    has_line(out, "error", "fix: check DNS/proxy on this machine");
    ck_assert_msg(!strstr(out, "token") || !strstr(out, "fix the moderator token"), "%s", out);
    ck_assert_msg(!strstr(out, "refuses the token"), "%s", out);
    free(out);
}
END_TEST

#define S_MOD "U0MODERATR"
#define S_PLANNER "U0PLANNER1"
#define S_CODER "U0CODER001"
#define S_TOK_MOD "xoxb-0000000001-moderatorsecret"
#define S_TOK_PLANNER "xoxb-0000000002-plannersecret00"
#define S_TOK_CODER "xoxb-0000000003-codersecret0000"

/* A Slack workspace (the fake) and a Slack-only config against it. */
static fake_slack *slack_workspace(void)
{
    fake_slack *fs = NULL;
    char err[256];
    ck_assert_int_eq(fake_slack_start(NULL, &fs, err, sizeof err), 0);
    const fake_slack_user_spec users[] = {
        {.user_id = S_MOD, .name = "moderator", .token = S_TOK_MOD, .bot = 1},
        {.user_id = S_PLANNER, .name = "planner", .token = S_TOK_PLANNER, .bot = 1},
        {.user_id = S_CODER, .name = "coder", .token = S_TOK_CODER, .bot = 1}};
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_eq(fake_slack_add_user(fs, &users[i]), 0);
    const char *all[] = {S_MOD, S_PLANNER, S_CODER, NULL}, *two[] = {S_MOD, S_PLANNER, NULL};
    ck_assert_int_eq(fake_slack_add_channel(fs, "C0WORK0001", "work", 0, all, NULL), 0);
    ck_assert_int_eq(fake_slack_add_channel(fs, "C0SIDE0001", "side", 1, two, NULL), 0);
    char *db = tu_path(DIR_, "state/dirigent.db"), *text = NULL;
    ck_assert_int_ge(
        asprintf(&text,
                 "{\"bindings\":["
                 "{\"agentId\":\"planner\",\"match\":{\"channel\":\"slack\",\"accountId\":"
                 "\"planner\"}},"
                 "{\"agentId\":\"coder\",\"match\":{\"channel\":\"slack\",\"accountId\":"
                 "\"coder\"}}],"
                 "\"channels\":{\"slack\":{\"enabled\":true,\"channels\":{"
                 "\"C0WORK0001\":{\"requireMention\":false},\"C0SIDE0001\":{},\"*\":{}},"
                 "\"accounts\":{\"planner\":{\"botToken\":\"${PLANNER_SLACK_BOT_TOKEN}\"},"
                 "\"coder\":{\"botToken\":\"${CODER_SLACK_BOT_TOKEN}\"}}}},"
                 "\"plugins\":{\"entries\":{\"dirigent\":{\"enabled\":true,\"hooks\":{"
                 "\"allowConversationAccess\":true,\"allowPromptInjection\":true},"
                 "\"config\":{\"dbPath\":\"%s\",\"slack\":{\"moderatorUserId\":\"" S_MOD "\"},"
                 "\"agents\":{\"planner\":{\"slackUserId\":\"" S_PLANNER "\"},"
                 "\"coder\":{\"slackUserId\":\"" S_CODER "\"}}}}}}}",
                 db),
        0);
    ck_assert_int_eq(tu_write_file(CONF, text), 0);
    free(text);
    free(db);
    setenv("SLACK_API_URL", fake_slack_url(fs), 1);
    setenv("DIRIGENT_SLACK_MODERATOR_TOKEN", S_TOK_MOD, 1);
    setenv("PLANNER_SLACK_BOT_TOKEN", S_TOK_PLANNER, 1);
    setenv("CODER_SLACK_BOT_TOKEN", S_TOK_CODER, 1);
    return fs;
}

static void no_slack_token_in(const char *out)
{
    const char *toks[] = {S_TOK_MOD, S_TOK_PLANNER, S_TOK_CODER};
    for (size_t i = 0; i < 3; i++)
        ck_assert_msg(!strstr(out, toks[i]), "a Slack token was printed: %s", out);
}

/* Slack, against the fake: the Web API the doctor used, each token's owner
 * (auth.test), the moderator's scopes, each channel's members. */
START_TEST(test_slack_tokens_scopes_and_members)
{
    fake_slack *fs = slack_workspace();
    char *out = NULL, want[160];
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    no_slack_token_in(out);
    snprintf(want, sizeof want, "Slack: the Web API used is %s (env SLACK_API_URL)",
             fake_slack_url(fs));
    has_line(out, "ok", want);
    has_line(out, "ok",
             "Slack moderator: the token of env DIRIGENT_SLACK_MODERATOR_TOKEN belongs to bot "
             "moderator (" S_MOD ")");
    has_line(out, "ok", "Slack moderator: has the scopes discussions need");
    has_line(out, "ok",
             "Slack planner: the token of channels.slack.accounts.planner.botToken belongs to "
             "bot planner (" S_PLANNER ")");
    has_line(out, "ok", "Slack channel C0WORK0001: members: moderator, coder, planner");
    has_line(out, "error", "Slack channel C0SIDE0001: coder (" S_CODER ") is not a member");
    ck_assert_ptr_nonnull(strstr(out, "1 error, "));
    free(out);
    /* The moderator app without groups:write: no private discussion channel. */
    const fake_slack_user_spec narrow = {
        .user_id = S_MOD,
        .name = "moderator",
        .token = S_TOK_MOD,
        .bot = 1,
        .scopes = "chat:write,channels:history,groups:history,channels:read,groups:read,"
                  "users:read"};
    ck_assert_int_eq(fake_slack_add_user(fs, &narrow), 0);
    /* And coder's account holding planner's token. */
    setenv("CODER_SLACK_BOT_TOKEN", S_TOK_PLANNER, 1);
    ck_assert_int_eq(doctor(&out, NULL, NULL), 1);
    no_slack_token_in(out);
    has_line(out, "error",
             "Slack moderator: the token lacks groups:write (groups:write: "
             "discussions: create a private channel, invite, archive)");
    has_line(out, "error",
             "Slack coder: the token of channels.slack.accounts.coder.botToken belongs to "
             "planner (" S_PLANNER "), not to the configured user " S_CODER);
    free(out);
    unsetenv("SLACK_API_URL");
    fake_slack_stop(fs);
}
END_TEST

Suite *make_doctor_suite(void)
{
    Suite *s = suite_create("doctor");
    TCase *tc = tcase_create("doctor");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_a_good_config_has_no_error);
    tcase_add_test(tc, test_missing_moderator_token);
    tcase_add_test(tc, test_wrong_moderator_token);
    tcase_add_test(tc, test_moderator_token_of_another_user);
    tcase_add_test(tc, test_agent_token_of_another_user);
    tcase_add_test(tc, test_channel_not_visible_to_an_agent);
    tcase_add_test(tc, test_moderator_without_manage_channels);
    tcase_add_test(tc, test_db_path_unwritable);
    tcase_add_test(tc, test_db_path_of_another_application);
    tcase_add_test(tc, test_allow_conversation_access_missing);
    tcase_add_test(tc, test_no_reply_pair_on_a_host_without_claim_hooks);
    tcase_add_test(tc, test_plugin_validation_and_unset_variables);
    tcase_add_test(tc, test_placeholders_are_errors_offline);
    tcase_add_test(tc, test_an_unresolvable_host_is_the_networks_fault);
    tcase_add_test(tc, test_slack_tokens_scopes_and_members);
    suite_add_tcase(s, tc);
    return s;
}
