/*
 * users.c -- user endpoints of the Discord client: a user's names. See
 * discord.h.
 */
#include "discord_int.h"

int dg_discord_get_user_names(dg_discord *d, const char *user_id, char *username,
                              size_t username_len, char *global_name, size_t global_len,
                              dg_discord_err *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (username && username_len)
        username[0] = '\0';
    if (global_name && global_len)
        global_name[0] = '\0';
    if (!d || !username || !username_len || !global_name || !global_len)
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0, "get user: missing argument");
    if (!user_id || !dg_snowflake_valid(user_id))
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                           "get user: user id must be a snowflake (1-20 digits)");
    char path[48];
    snprintf(path, sizeof path, "/users/%s", user_id);
    json_t *resp;
    int rc = dgd_get_json(d, "get user", path, JSON_OBJECT, &resp, err);
    if (rc != DG_OK)
        return rc;
    const char *un = json_string_value(json_object_get(resp, "username"));
    const char *gn = json_string_value(json_object_get(resp, "global_name"));
    if (!un) {
        json_decref(resp);
        return dgd_set_err(err, DG_ERR_IO, err ? err->http_status : 0, 1,
                           "get user: Discord's answer has no username");
    }
    snprintf(username, username_len, "%s", un);
    if (gn)
        snprintf(global_name, global_len, "%s", gn);
    json_decref(resp);
    return DG_OK;
}
