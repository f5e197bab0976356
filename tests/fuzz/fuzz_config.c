/*
 * fuzz_config.c -- libFuzzer target: config validation (plugin/config.c).
 *
 * Input: JSON text, given to dg_config_parse as the plugin config (with
 * the environment overrides unset). Checked: a refusal says why and leaves
 * the struct zeroed; an accepted config has its required strings, absolute
 * paths, an apiBase without a trailing slash, and every agent found again
 * by id and by Discord user id. Parsing touches no file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "openclaw/plugin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_config: %s\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsetenv("DIRIGENT_SESSION_POLICY");
    unsetenv("DIRIGENT_MODERATOR_TOKEN");
    unsetenv("DIRIGENT_STATE_DIR");
    unsetenv("OPENCLAW_CONFIG_PATH");
    json_error_t je;
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
    if (!j)
        return 0;
    dg_config c;
    char err[1024] = "";
    int rc = dg_config_parse(j, &c, err, sizeof err);
    if (rc != OC_OK) {
        static const dg_config zero;
        if (!err[0])
            fail("a refusal without a reason");
        if (memcmp(&c, &zero, sizeof c) != 0)
            fail("a refused config left fields set");
    } else {
        /* The no-reply pair is optional (hosts with claim hooks need none),
         * but never half given. */
        if (!c.no_reply_provider != !c.no_reply_model || !c.db_path || c.db_path[0] != '/')
            fail("accepted config with half a no-reply pair or without an absolute dbPath");
        if (c.templates_dir && c.templates_dir[0] != '/')
            fail("relative templatesDir after parse");
        size_t bl = c.discord_api_base ? strlen(c.discord_api_base) : 0;
        if (!bl || c.discord_api_base[bl - 1] == '/')
            fail("apiBase missing or with a trailing slash");
        for (size_t i = 0; i < c.n_agents; i++) {
            if (dg_config_agent(&c, c.agents[i].agent_id) != &c.agents[i])
                fail("an agent is not found by its id");
            const char *d = c.agents[i].discord_user_id, *sl = c.agents[i].slack_user_id;
            if (!d && !sl)
                fail("an agent was accepted with neither a Discord nor a Slack user id");
            if (d && dg_config_agent_by_user(&c, d) != &c.agents[i])
                fail("an agent is not found by its Discord user id");
            if (sl && dg_config_agent_by_user(&c, sl) != &c.agents[i])
                fail("an agent is not found by its Slack user id");
        }
        if (!c.has_discord && !c.has_slack)
            fail("accepted a config with neither a discord nor a slack section");
        if (c.has_slack && (!c.slack_api_base || !c.slack_moderator_user_id))
            fail("a slack section without its api base or moderator");
        if (c.moderator_token && strstr(err, c.moderator_token))
            fail("the token reached the error text");
    }
    dg_config_free(&c);
    json_decref(j);
    return 0;
}
