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
            const dg_agent_cfg *u = dg_config_agent_by_user(&c, c.agents[i].discord_user_id);
            if (!u || strcmp(u->discord_user_id, c.agents[i].discord_user_id) != 0)
                fail("an agent is not found by its Discord user id");
        }
        if (c.moderator_token && strstr(err, c.moderator_token))
            fail("the token reached the error text");
    }
    dg_config_free(&c);
    json_decref(j);
    return 0;
}
