/*
 * check_ocgw.c -- unit tests of the reference gateway's pieces (host/ocgw_*.c
 * minus its main, linked from libocgw.a): the transcript's one-line texts and
 * the host config's checks. The gateway as a whole runs in check_e2e.c.
 */
#include <check.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_id.h"
#include "ocgw.h"
#include "testutil.h"

/* ---- one-line texts ------------------------------------------------------------------ */

static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* ocgw_oneline(text, max) is a C string inside its own allocation, valid
 * UTF-8, at most max characters of the text (line breaks as spaces) and
 * "..." when cut; want (if not NULL) is the exact result. */
static void expect_oneline(const char *text, size_t max, const char *want)
{
    char *out = ocgw_oneline(text, max);
    ck_assert_ptr_nonnull(out);
    size_t len = strlen(out);
    /* malloc_usable_size: the bytes written must fit the block handed out
     * (a heap overflow here was the bug; ASan says the same louder). */
    ck_assert_msg(len + 1 <= malloc_usable_size(out), "oneline wrote %zu bytes into a block of %zu",
                  len + 1, malloc_usable_size(out));
    json_t *j = json_string(out);
    ck_assert_msg(j != NULL, "oneline cut a UTF-8 character: %s", out);
    json_decref(j);
    if (want) {
        ck_assert_str_eq(out, want);
    } else {
        ck_assert_msg(len > 3 && !strcmp(out + len - 3, "..."), "not marked as cut: %s", out);
        ck_assert_msg(!strncmp(out, text, len - 3), "not a prefix of the text: %s", out);
        ck_assert_uint_le(utf8_chars(out) - 3, max);
        ck_assert_uint_ge(utf8_chars(out) - 3, max - 1);
    }
    free(out);
}

START_TEST(oneline_of_multibyte_text_fits_its_buffer)
{
    /* Chinese text: 3-byte characters; emoji take 4. */
    char zh[1024] = "", emoji[1024] = "";
    for (int i = 0; i < 100; i++)
        strcat(zh, "讨论");
    for (int i = 0; i < 120; i++)
        strcat(emoji, "\xF0\x9F\x98\x80");
    expect_oneline(zh, 60, NULL);
    expect_oneline(zh, 199, NULL);
    expect_oneline(emoji, 50, NULL);
    /* Short texts whole, line breaks as spaces; ASCII cut at max. */
    expect_oneline("讨论\n结束", 60, "讨论 结束");
    expect_oneline("plain\ttext", 5, "plain...");
    expect_oneline("", 10, "");
}
END_TEST

/* ---- host config --------------------------------------------------------------------------- */

/* Writes a gateway config of two agents and one human with the given Discord
 * user ids (moderator first) and loads it; returns the status, err filled. */
static int load_with_users(const char *mod, const char *a1, const char *a2, const char *h1,
                           const char *h2, char *err, size_t n)
{
    char *dir = tu_mkdtemp();
    setenv("R3_OCGW_TOKEN", "t", 1);
    json_t *humans = json_array();
    json_array_append_new(humans, json_pack("{s:s, s:s}", "id", "alice", "discordUserId", h1));
    if (h2)
        json_array_append_new(humans, json_pack("{s:s, s:s}", "id", "bob", "discordUserId", h2));
    json_t *cfg = json_pack(
        "{s:{s:s, s:s, s:s}, s:{s:s, s:{s:s, s:s}}, s:[{s:s, s:s, s:s, s:s, s:s},"
        " {s:s, s:s, s:s, s:s, s:s}], s:o}",
        "discord", "apiBase", "http://127.0.0.1:9/api/v10", "guildId", "100000000000000001",
        "moderatorUserId", mod, "gateway", "stateDir", "state", "noReply", "provider", "p", "model",
        "m", "agents", "id", "planner", "workspace", "w/planner", "discordUserId", a1, "tokenEnv",
        "R3_OCGW_TOKEN", "model", "x/planner", "id", "coder", "workspace", "w/coder",
        "discordUserId", a2, "tokenEnv", "R3_OCGW_TOKEN", "model", "x/coder", "humans", humans);
    ck_assert_ptr_nonnull(cfg);
    char *path = tu_path(dir, "host.json");
    ck_assert_int_eq(json_dump_file(cfg, path, 0), 0);
    json_decref(cfg);
    ocgw_config c;
    err[0] = '\0';
    int rc = ocgw_config_load(path, &c, err, n);
    if (rc == OC_OK)
        ocgw_config_free(&c);
    free(path);
    tu_rmtree(dir);
    free(dir);
    return rc;
}

START_TEST(config_refuses_a_discord_user_shared_by_two_participants)
{
    char err[1024];
    const char *M = "200000000000000001", *P = "200000000000000011", *C = "200000000000000013",
               *A = "200000000000000021", *B = "200000000000000022";
    /* Distinct users load. */
    ck_assert_msg(load_with_users(M, P, C, A, B, err, sizeof err) == OC_OK, "%s", err);
    /* Two agents on one bot user: the gateway would take one's posts for
     * the other's and skip its runs as "its own message". */
    ck_assert_int_eq(load_with_users(M, P, P, A, NULL, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "agents[coder].discordUserId") && strstr(err, "agent planner"), "%s",
                  err);
    /* An agent that is the moderator bot. */
    ck_assert_int_eq(load_with_users(M, P, M, A, NULL, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "agents[coder].discordUserId") &&
                      strstr(err, "discord.moderatorUserId"),
                  "%s", err);
    /* Two humans on one user, a human that is the moderator. */
    ck_assert_int_eq(load_with_users(M, P, C, A, A, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "humans[bob].discordUserId") && strstr(err, "human alice"), "%s",
                  err);
    ck_assert_int_eq(load_with_users(M, P, C, M, NULL, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "humans[alice].discordUserId") &&
                      strstr(err, "discord.moderatorUserId"),
                  "%s", err);
    /* Still refused as before: a human that is an agent. */
    ck_assert_int_eq(load_with_users(M, P, C, C, NULL, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "humans[alice].discordUserId: same user as agent coder"), "%s", err);
}
END_TEST

START_TEST(config_refuses_a_human_id_used_twice)
{
    char err[1024];
    char *dir = tu_mkdtemp();
    setenv("R3_OCGW_TOKEN", "t", 1);
    json_t *cfg =
        json_pack("{s:{s:s}, s:{s:{s:s, s:s}}, s:[{s:s, s:s, s:s, s:s, s:s}],"
                  " s:[{s:s, s:s}, {s:s, s:s}]}",
                  "discord", "apiBase", "http://127.0.0.1:9/api/v10", "gateway", "noReply",
                  "provider", "p", "model", "m", "agents", "id", "planner", "workspace", "w",
                  "discordUserId", "200000000000000011", "tokenEnv", "R3_OCGW_TOKEN", "model",
                  "x/planner", "humans", "id", "alice", "discordUserId", "200000000000000021", "id",
                  "alice", "discordUserId", "200000000000000022");
    char *path = tu_path(dir, "host.json");
    ck_assert_int_eq(json_dump_file(cfg, path, 0), 0);
    json_decref(cfg);
    ocgw_config c;
    ck_assert_int_eq(ocgw_config_load(path, &c, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "humans[1].id: \"alice\" is used by two humans"), "%s", err);
    free(path);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

/* A configured channel that no agent sees had no token to read it with: its
 * cursor was never set, and the gateway then never posted a scripted human
 * message (it waits for every cursor). */
START_TEST(config_refuses_a_channel_no_agent_sees)
{
    char err[1024];
    char *dir = tu_mkdtemp();
    setenv("R3_OCGW_TOKEN", "t", 1);
    json_t *cfg =
        json_pack("{s:{s:s}, s:{s:{s:s, s:s}}, s:[{s:s, s:s, s:s, s:s, s:s}], s:{s:{s:s, s:[]}}}",
                  "discord", "apiBase", "http://127.0.0.1:9/api/v10", "gateway", "noReply",
                  "provider", "p", "model", "m", "agents", "id", "planner", "workspace", "w",
                  "discordUserId", "200000000000000011", "tokenEnv", "R3_OCGW_TOKEN", "model",
                  "x/planner", "channels", "work", "id", "300000000000000001", "agents");
    char *path = tu_path(dir, "host.json");
    ck_assert_int_eq(json_dump_file(cfg, path, 0), 0);
    ocgw_config c;
    ck_assert_int_eq(ocgw_config_load(path, &c, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "channels.work.agents") && strstr(err, "at least one agent"), "%s",
                  err);
    ck_assert_msg(strstr(err, "\"watch\": true"), "%s", err);
    /* Watched (no agent sees it, the gateway only shows it): with agents,
     * refused; without, no agent is given it. */
    json_t *work = json_object_get(json_object_get(cfg, "channels"), "work");
    json_object_set_new(work, "watch", json_true());
    ck_assert_int_eq(json_dump_file(cfg, path, 0), 0);
    ck_assert_int_eq(ocgw_config_load(path, &c, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "channels.work.agents: a watched channel is one no agent sees"), "%s",
                  err);
    json_object_del(work, "agents");
    ck_assert_int_eq(json_dump_file(cfg, path, 0), 0);
    ck_assert_msg(ocgw_config_load(path, &c, err, sizeof err) == OC_OK, "%s", err);
    ck_assert_uint_eq(c.channels[0].n_agents, 0);
    ck_assert_int_eq(c.channels[0].watch, 1);
    ocgw_config_free(&c);
    /* Without the key, every agent sees it. */
    json_object_del(work, "watch");
    ck_assert_int_eq(json_dump_file(cfg, path, 0), 0);
    ck_assert_msg(ocgw_config_load(path, &c, err, sizeof err) == OC_OK, "%s", err);
    ck_assert_uint_eq(c.channels[0].n_agents, 1);
    ck_assert_int_eq(c.channels[0].watch, 0);
    ocgw_config_free(&c);
    json_decref(cfg);
    free(path);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

/* gateway.runOnly: the agents (and humans) this gateway runs; the others
 * stay known but need no token here. Every wrong entry is refused naming
 * it, and a refused list changes nothing. */
static int load_run_only(json_t *run_only, ocgw_config *c, char *err, size_t n)
{
    char *dir = tu_mkdtemp();
    setenv("R3_OCGW_TOKEN", "t", 1);
    unsetenv("R3_OCGW_NO_TOKEN");
    json_t *cfg = json_pack(
        "{s:{s:s}, s:{s:{s:s, s:s}}, s:[{s:s, s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s, s:s}],"
        " s:[{s:s, s:s}]}",
        "discord", "apiBase", "http://127.0.0.1:9/api/v10", "gateway", "noReply", "provider", "p",
        "model", "m", "agents", "id", "planner", "workspace", "w/p", "discordUserId",
        "200000000000000011", "tokenEnv", "R3_OCGW_TOKEN", "model", "x/planner", "id", "coder",
        "workspace", "w/c", "discordUserId", "200000000000000013", "tokenEnv", "R3_OCGW_NO_TOKEN",
        "model", "x/coder", "humans", "id", "alice", "discordUserId", "200000000000000021");
    if (run_only)
        json_object_set_new(json_object_get(cfg, "gateway"), "runOnly", run_only);
    char *path = tu_path(dir, "host.json");
    ck_assert_int_eq(json_dump_file(cfg, path, 0), 0);
    json_decref(cfg);
    err[0] = '\0';
    int rc = ocgw_config_load(path, c, err, n);
    free(path);
    tu_rmtree(dir);
    free(dir);
    return rc;
}

START_TEST(config_run_only_names_the_agents_this_gateway_runs)
{
    char err[1024];
    ocgw_config c;
    /* coder's token is not in this environment: fine when another gateway runs it. */
    ck_assert_msg(load_run_only(json_pack("[s]", "planner"), &c, err, sizeof err) == OC_OK, "%s",
                  err);
    ck_assert_int_eq(c.agents[0].local, 1);
    ck_assert_int_eq(c.agents[1].local, 0);
    ck_assert_int_eq(c.humans[0].local, 0);
    ck_assert_int_eq(c.split, 1);
    /* --run-only replaces it with the same rules; a refusal changes nothing. */
    json_t *l = json_pack("[s]", "coder");
    ck_assert_int_eq(ocgw_config_run_only(&c, l, "--run-only", err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "agents[coder].tokenEnv: environment variable R3_OCGW_NO_TOKEN"),
                  "%s", err);
    ck_assert_int_eq(c.agents[0].local, 1);
    ck_assert_int_eq(c.agents[1].local, 0);
    json_decref(l);
    l = json_pack("[s, s]", "alice", "planner");
    ck_assert_msg(ocgw_config_run_only(&c, l, "--run-only", err, sizeof err) == OC_OK, "%s", err);
    ck_assert_int_eq(c.humans[0].local, 1);
    json_decref(l);
    ocgw_config_free(&c);
    /* Without it the gateway runs every agent: coder's token is needed. */
    ck_assert_int_eq(load_run_only(NULL, &c, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "agents[coder].tokenEnv"), "%s", err);
    static const struct {
        const char *json, *want;
    } bad[] = {
        {"[\"plannr\"]", "gateway.runOnly[0]: \"plannr\" is not the id of an agent or human"},
        {"[\"planner\", \"planner\"]", "gateway.runOnly[1]: \"planner\" is listed twice"},
        {"[\"alice\"]", "gateway.runOnly: names no agent"},
        {"[]", "gateway.runOnly: expected a non-empty array"},
        {"\"planner\"", "gateway.runOnly: expected a non-empty array"},
        {"[7]", "gateway.runOnly[0]: a non-string is not the id"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *v = json_loads(bad[i].json, JSON_DECODE_ANY, NULL);
        ck_assert_ptr_nonnull(v);
        ck_assert_int_eq(load_run_only(v, &c, err, sizeof err), OC_ERR_INVALID);
        ck_assert_msg(strstr(err, bad[i].want), "%s: %s", bad[i].json, err);
    }
}
END_TEST

/* ---- secrets -------------------------------------------------------------------------------- */

#define BOT_TOKEN "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhIjKl.abcdefghijklmnopqrstuvwxyz0123456789AB"

/* A one-agent config (new reference) with a plugin entry whose config holds
 * a moderator token where it belongs. */
static json_t *small_config(void)
{
    json_t *cfg = json_pack(
        "{s:{s:{s:{s:{s:{s:s}}}}}, s:{s:s}, s:{s:{s:s, s:s}}, s:[{s:s, s:s, s:s, s:s, s:s}]}",
        "plugins", "entries", "dirigent", "config", "discord", "moderatorToken", BOT_TOKEN,
        "discord", "apiBase", "http://127.0.0.1:9/api/v10", "gateway", "noReply", "provider", "p",
        "model", "m", "agents", "id", "planner", "workspace", "w", "discordUserId",
        "200000000000000011", "tokenEnv", "R3_OCGW_TOKEN", "model", "x/planner");
    ck_assert_ptr_nonnull(cfg);
    return cfg;
}

static int load_json(json_t *cfg, char *err, size_t n)
{
    char *dir = tu_mkdtemp();
    char *path = tu_path(dir, "host.json");
    ck_assert_int_eq(json_dump_file(cfg, path, 0), 0);
    ocgw_config c;
    err[0] = '\0';
    int rc = ocgw_config_load(path, &c, err, n);
    if (rc == OC_OK)
        ocgw_config_free(&c);
    free(path);
    tu_rmtree(dir);
    free(dir);
    return rc;
}

/* A bot token pasted into tokenEnv (or any other key, directly or through
 * ${VAR}) is refused by the key's path and never shown. */
START_TEST(config_never_echoes_a_token)
{
    char err[1024];
    setenv("R3_OCGW_TOKEN", "t", 1);
    setenv("R3_OCGW_SECRET", BOT_TOKEN, 1);
    json_t *cfg = small_config();
    ck_assert_msg(load_json(cfg, err, sizeof err) == OC_OK, "%s", err);
    json_t *agent = json_array_get(json_object_get(cfg, "agents"), 0);
    static const struct {
        const char *key, *value, *names;
    } cases[] = {
        {"tokenEnv", BOT_TOKEN, "agents[0].tokenEnv: "},
        {"tokenEnv", "${R3_OCGW_SECRET}", "agents[0].tokenEnv: "},
        {"discordUserId", BOT_TOKEN, "agents[0].discordUserId: "},
        {"id", BOT_TOKEN, "agents[0].id: "},
        {"model", "x/" BOT_TOKEN, "agents[0].model: "},
        {BOT_TOKEN, "x", "a key of agents[0]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *copy = json_deep_copy(agent);
        json_object_set_new(agent, cases[i].key, json_string(cases[i].value));
        ck_assert_int_eq(load_json(cfg, err, sizeof err), OC_ERR_INVALID);
        ck_assert_msg(!strstr(err, "MTIzNDU2") && !strstr(err, "GhIjKl") &&
                          !strstr(err, "abcdefghijklmnop"),
                      "case %zu echoes the token: %s", i, err);
        ck_assert_msg(strstr(err, cases[i].names) &&
                          strstr(err, "this looks like a bot token; tokens belong in the "
                                      "environment"),
                      "case %zu: %s", i, err);
        json_array_set_new(json_object_get(cfg, "agents"), 0, copy);
        agent = copy;
    }
    json_decref(cfg);
    unsetenv("R3_OCGW_SECRET");
}
END_TEST

/* The gateway applies the plugin's agent-id rule, word for word. */
START_TEST(config_uses_the_one_agent_id_rule)
{
    char err[1024];
    setenv("R3_OCGW_TOKEN", "t", 1);
    json_t *cfg = small_config();
    json_t *agent = json_array_get(json_object_get(cfg, "agents"), 0);
    json_object_set_new(agent, "id", json_string("Planner"));
    ck_assert_int_eq(load_json(cfg, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "agents[0].id: \"Planner\" must be " DG_AGENT_ID_RULE), "%s", err);
    json_object_set_new(agent, "id", json_string("coder_2-b"));
    ck_assert_msg(load_json(cfg, err, sizeof err) == OC_OK, "%s", err);
    json_decref(cfg);
}
END_TEST

/* The demo's value line is arithmetic on the counters it is given: runs,
 * avoided, made and the rounded share, never a fixed text. */
/* Against OpenClaw alone the plugin may make more calls than it saves: the
 * line says so, never a negative saving. */
START_TEST(value_line_against_openclaw_alone_says_more)
{
    char *v = ocgw_value_line_made(8, 7);
    ck_assert_str_eq(v, "without the plugin all 8 agent runs would have called a model: 1 "
                        "avoided (13%), 7 made");
    free(v);
    v = ocgw_value_line_made(6, 8);
    ck_assert_str_eq(v, "without the plugin all 6 agent runs would have called a model: 0 "
                        "avoided (0%), 8 made (2 more)");
    free(v);
}
END_TEST

/* ---- scripted humans ------------------------------------------------------------------------ */

/* Two triggers seen before the human posted its first step (one poll brought
 * both, or the first post waited for a retry): neither is missed, and each
 * triggers its own step. */
START_TEST(human_triggers_seen_early_are_kept_for_their_steps)
{
    char *needle_a[] = {"ready"}, *needle_b[] = {"back on the task"};
    ocgw_human_step steps[3] = {
        {.channel = "C1", .content = "first"},
        {.has_after = 1,
         .after = {.from = "U0PLANNER", .contains = needle_a, .n_contains = 1},
         .channel = "C1",
         .content = "second"},
        {.has_after = 1,
         .after = {.from = "U0PLANNER", .contains = needle_b, .n_contains = 1},
         .channel = "C1",
         .content = "third",
         .in_thread = 1},
    };
    ocgw_human alice = {
        .id = "alice", .user_id = "U0ALICE", .steps = steps, .n_steps = 3, .local = 1};
    ocgw g;
    memset(&g, 0, sizeof g);
    g.cfg.humans = &alice;
    g.cfg.n_humans = 1;
    char *dir = tu_mkdtemp();
    char err[200];
    ck_assert_msg(ocgw_state_open(&g.st, dir, 0, err, sizeof err) == 0, "%s", err);
    ocgw_msg ready = {
        .id = "10.1", .channel_id = "C1", .author_id = "U0PLANNER", .content = "result ready"};
    ocgw_msg back = {.id = "10.2",
                     .channel_id = "C1",
                     .author_id = "U0PLANNER",
                     .content = "Back on the task? back on the task"};
    ocgw_msg other = {
        .id = "10.3", .channel_id = "C1", .author_id = "U0OTHER", .content = "back on the task"};
    ocgw_humans_observe(&g, &other); /* not the step's author: no trigger */
    ocgw_humans_observe(&g, &ready);
    ocgw_humans_observe(&g, &back);
    json_t *seen =
        json_object_get(json_object_get(json_object_get(g.st.doc, "humans"), "alice"), "seen");
    ck_assert_int_eq(json_object_size(seen), 2);
    ck_assert_str_eq(json_string_value(json_object_get(seen, "1")), "10.1");
    ck_assert_str_eq(json_string_value(json_object_get(seen, "2")), "10.2");
    ck_assert_int_eq(ocgw_humans_done(&g), 0);
    ocgw_state_close(&g.st);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(value_line_is_computed_from_the_counters)
{
    static const struct {
        long runs, avoided;
        const char *want;
    } cases[] = {
        {24, 16,
         "without the plugin all 24 agent runs would have called a model: 16 avoided "
         "(67%), 8 made"},
        {50, 32,
         "without the plugin all 50 agent runs would have called a model: 32 avoided "
         "(64%), 18 made"},
        {3, 1,
         "without the plugin all 3 agent runs would have called a model: 1 avoided (33%), "
         "2 made"},
        {8, 0,
         "without the plugin all 8 agent runs would have called a model: 0 avoided (0%), "
         "8 made"},
        {1, 1,
         "without the plugin the one agent run would have called a model: 1 avoided "
         "(100%), 0 made"},
        /* a hand-edited state never gives more than every run, or less than none */
        {4, 9,
         "without the plugin all 4 agent runs would have called a model: 4 avoided "
         "(100%), 0 made"},
        {4, -2,
         "without the plugin all 4 agent runs would have called a model: 0 avoided "
         "(0%), 4 made"},
        {0, 0, "no agent ran, so there was no model call to avoid"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *line = ocgw_value_line(cases[i].runs, cases[i].avoided);
        ck_assert_ptr_nonnull(line);
        ck_assert_msg(!strcmp(line, cases[i].want), "runs %ld avoided %ld: \"%s\"", cases[i].runs,
                      cases[i].avoided, line);
        free(line);
    }
}
END_TEST

Suite *make_ocgw_suite(void)
{
    Suite *s = suite_create("ocgw");
    TCase *tc = tcase_create("pieces");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, oneline_of_multibyte_text_fits_its_buffer);
    tcase_add_test(tc, config_refuses_a_discord_user_shared_by_two_participants);
    tcase_add_test(tc, config_refuses_a_human_id_used_twice);
    tcase_add_test(tc, config_refuses_a_channel_no_agent_sees);
    tcase_add_test(tc, config_run_only_names_the_agents_this_gateway_runs);
    tcase_add_test(tc, config_never_echoes_a_token);
    tcase_add_test(tc, config_uses_the_one_agent_id_rule);
    tcase_add_test(tc, value_line_is_computed_from_the_counters);
    tcase_add_test(tc, human_triggers_seen_early_are_kept_for_their_steps);
    tcase_add_test(tc, value_line_against_openclaw_alone_says_more);
    suite_add_tcase(s, tc);
    return s;
}
