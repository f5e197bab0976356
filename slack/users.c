/*
 * users.c -- who the moderator is (auth.test) and who a user is
 * (users.info). See slack.h.
 */
#include "slack_int.h"

#include <stdio.h>
#include <string.h>

int dg_slack_auth_test(dg_slack *s, dg_slack_identity *out, dg_slack_err *err)
{
    memset(out, 0, sizeof *out);
    json_t *ans = NULL;
    int rc = dgs_call(s, "auth.test", NULL, "", 1, &ans, err);
    if (rc != DG_OK)
        return rc;
    dgs_copy_str(ans, "user_id", out->user_id, sizeof out->user_id);
    dgs_copy_str(ans, "bot_id", out->bot_id, sizeof out->bot_id);
    dgs_copy_str(ans, "team_id", out->team_id, sizeof out->team_id);
    dgs_copy_str(ans, "team", out->team, sizeof out->team);
    dgs_copy_str(ans, "user", out->user, sizeof out->user);
    json_decref(ans);
    if (!dg_slack_user_id_valid(out->user_id))
        return dgs_fail(err, DG_ERR_IO, 200, 0,
                        "Slack answered auth.test without a user id; check the API base URL");
    /* find_by_key then knows the moderator's own messages. */
    pthread_mutex_lock(&s->mu);
    snprintf(s->self_id, sizeof s->self_id, "%s", out->user_id);
    pthread_mutex_unlock(&s->mu);
    return DG_OK;
}

int dg_slack_user_info(dg_slack *s, const char *user_id, dg_slack_user *out, dg_slack_err *err)
{
    memset(out, 0, sizeof *out);
    if (err)
        memset(err, 0, sizeof *err);
    if (!dg_slack_user_id_valid(user_id))
        return dgs_fail(err, DG_ERR_INVALID, 0, 0,
                        "users.info: the user id must be U or W and 2..20 upper-case letters or "
                        "digits (Slack's member id, e.g. U0123ABCD)");
    dg_buf form = {0};
    if (dgs_form_add(&form, "user", user_id) != 0) {
        dg_buf_free(&form);
        return dgs_fail(err, DG_ERR_NOMEM, 0, 1, "out of memory");
    }
    json_t *ans = NULL;
    int rc = dgs_call(s, "users.info", NULL, form.s, 1, &ans, err);
    dg_buf_free(&form);
    if (rc != DG_OK)
        return rc;
    json_t *u = json_object_get(ans, "user");
    json_t *profile = json_object_get(u, "profile");
    dgs_copy_str(u, "id", out->id, sizeof out->id);
    dgs_copy_str(u, "name", out->name, sizeof out->name);
    dgs_copy_str(u, "real_name", out->real_name, sizeof out->real_name);
    dgs_copy_str(profile, "display_name", out->display_name, sizeof out->display_name);
    dgs_copy_str(profile, "bot_id", out->bot_id, sizeof out->bot_id);
    out->is_bot = json_is_true(json_object_get(u, "is_bot"));
    json_decref(ans);
    if (strcmp(out->id, user_id) != 0)
        return dgs_fail(err, DG_ERR_IO, 200, 0,
                        "Slack answered users.info for %s with another user; check the API "
                        "base URL",
                        user_id);
    return DG_OK;
}
