/*
 * channels.c -- Slack's channel-name rule, private channels with given
 * members (conversations.create, then conversations.invite), invites and
 * archiving (Slack's way of closing a channel for good). See slack.h.
 */
#include "slack_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_level.h"

#define INVITE_BATCH 1000 /* users per conversations.invite, Slack's bound */
#define LIST_PAGE "200"
#define LIST_PAGES 10

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int dg_slack_sanitize_channel_name(const char *in, char *out, size_t out_len, int *changed,
                                   char *why, size_t why_len)
{
    char scratch[4];
    if (!why || !why_len) {
        why = scratch;
        why_len = sizeof scratch;
    }
    why[0] = '\0';
    if (changed)
        *changed = 0;
    if (out_len)
        out[0] = '\0';
    if (!in || out_len < DG_SLACK_MAX_CHANNEL_NAME + 1) {
        snprintf(why, why_len, "channel name: none given, or no room for %d characters",
                 DG_SLACK_MAX_CHANNEL_NAME);
        return DG_ERR_INVALID;
    }
    size_t o = 0;
    int alnum = 0;
    for (const char *p = in; *p && o < DG_SLACK_MAX_CHANNEL_NAME; p++) {
        char c = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
        if (!name_char(c))
            c = '-'; /* a space, a period, any other byte: one '-' per run */
        if (c == '-' && (o == 0 || out[o - 1] == '-'))
            continue;
        out[o++] = c;
        if (c != '-' && c != '_')
            alnum = 1;
    }
    while (o > 0 && out[o - 1] == '-')
        o--;
    out[o] = '\0';
    if (!alnum) {
        out[0] = '\0';
        snprintf(why, why_len,
                 "channel name: nothing is left once Slack's rules are applied (lower-case "
                 "letters, digits, '-' and '_', at most %d characters): give a name with letters "
                 "or digits",
                 DG_SLACK_MAX_CHANNEL_NAME);
        return DG_ERR_INVALID;
    }
    if (changed)
        *changed = strcmp(in, out) != 0;
    return DG_OK;
}

/* The ids joined with ',' (the moderator itself and repeats left out)
 * into form as "users". n_out: how many. 0, -1 out of memory. */
static int users_arg(dg_buf *form, const char *self, const char *const *ids, size_t n,
                     size_t *n_out)
{
    dg_buf list = {0};
    *n_out = 0;
    for (size_t i = 0; i < n; i++) {
        int dup = !strcmp(ids[i], self);
        for (size_t j = 0; j < i && !dup; j++)
            dup = !strcmp(ids[i], ids[j]);
        if (dup)
            continue;
        if ((list.len && dg_buf_adds(&list, ",") != 0) || dg_buf_adds(&list, ids[i]) != 0) {
            dg_buf_free(&list);
            return -1;
        }
        ++*n_out;
    }
    int rc = *n_out ? dgs_form_add(form, "users", list.s) : 0;
    dg_buf_free(&list);
    return rc;
}

/* The moderator's own user id into self (auth.test once when unknown). */
static int self_of(dg_slack *s, char *self, size_t len, dg_slack_err *err)
{
    pthread_mutex_lock(&s->mu);
    snprintf(self, len, "%s", s->self_id);
    pthread_mutex_unlock(&s->mu);
    if (self[0])
        return DG_OK;
    dg_slack_identity me;
    int rc = dg_slack_auth_test(s, &me, err);
    if (rc == DG_OK)
        snprintf(self, len, "%s", me.user_id);
    return rc;
}

/* One conversations.invite of ids (all valid); already_in_channel is
 * fine. */
static int invite_once(dg_slack *s, const char *channel_id, const char *self,
                       const char *const *ids, size_t n, dg_slack_err *err)
{
    dg_buf form = {0};
    size_t k = 0;
    if (dgs_form_add(&form, "channel", channel_id) != 0 ||
        users_arg(&form, self, ids, n, &k) != 0) {
        dg_buf_free(&form);
        return dgs_fail(err, DG_ERR_NOMEM, 0, 1, "out of memory");
    }
    json_t *ans = NULL;
    int rc = k ? dgs_call(s, "conversations.invite", NULL, form.s, 1, &ans, err) : DG_OK;
    dg_buf_free(&form);
    json_decref(ans);
    if (rc != DG_OK && !strcmp(err->error, "already_in_channel")) {
        if (k == 1) {
            memset(err, 0, sizeof *err);
            return DG_OK;
        }
        /* One of them is in already: each on its own, so the others get in. */
        for (size_t i = 0; i < n; i++)
            if ((rc = invite_once(s, channel_id, self, ids + i, 1, err)) != DG_OK)
                return rc;
    }
    return rc;
}

int dg_slack_invite(dg_slack *s, const char *channel_id, const char *const *member_ids,
                    size_t n_members, dg_slack_err *err)
{
    dg_slack_err local;
    if (!err)
        err = &local;
    memset(err, 0, sizeof *err);
    if (!dg_slack_channel_id_valid(channel_id))
        return dgs_fail(err, DG_ERR_INVALID, 0, 0,
                        "conversations.invite: the channel id must be C or G and 2..20 "
                        "upper-case letters or digits");
    for (size_t i = 0; i < n_members; i++)
        if (!dg_slack_user_id_valid(member_ids[i]))
            return dgs_fail(err, DG_ERR_INVALID, 0, 0,
                            "conversations.invite: member %zu is no Slack user id (U... or "
                            "W..., e.g. U0123ABCD)",
                            i + 1);
    char self[DG_SLACK_ID_LEN];
    int rc = self_of(s, self, sizeof self, err);
    for (size_t i = 0; rc == DG_OK && i < n_members; i += INVITE_BATCH) {
        size_t n = n_members - i < INVITE_BATCH ? n_members - i : INVITE_BATCH;
        rc = invite_once(s, channel_id, self, member_ids + i, n, err);
    }
    return rc;
}

int dg_slack_create_private_channel(dg_slack *s, const char *name, const char *const *member_ids,
                                    size_t n_members, char *channel_id, char *name_out,
                                    dg_slack_err *err)
{
    dg_slack_err local;
    if (!err)
        err = &local;
    channel_id[0] = '\0';
    memset(err, 0, sizeof *err);
    char clean[DG_SLACK_MAX_CHANNEL_NAME + 1], why[320];
    int changed = 0;
    if (dg_slack_sanitize_channel_name(name, clean, sizeof clean, &changed, why, sizeof why))
        return dgs_fail(err, DG_ERR_INVALID, 0, 0, "conversations.create: %s", why);
    if (name_out)
        snprintf(name_out, DG_SLACK_MAX_CHANNEL_NAME + 1, "%s", clean);
    if (changed)
        dgh_log(&s->http, DG_LOG_INFO,
                "slack: channel name \"%.80s\" made \"%s\" by Slack's rules (lower case, "
                "letters, digits, '-' and '_', at most %d characters)",
                name, clean, DG_SLACK_MAX_CHANNEL_NAME);
    for (size_t i = 0; i < n_members; i++)
        if (!dg_slack_user_id_valid(member_ids[i]))
            return dgs_fail(err, DG_ERR_INVALID, 0, 0,
                            "conversations.create: member %zu is no Slack user id (U... or "
                            "W..., e.g. U0123ABCD)",
                            i + 1);
    dg_buf form = {0};
    if (dgs_form_add(&form, "name", clean) != 0 || dgs_form_add(&form, "is_private", "true")) {
        dg_buf_free(&form);
        return dgs_fail(err, DG_ERR_NOMEM, 0, 1, "out of memory");
    }
    json_t *ans = NULL;
    int rc = dgs_call(s, "conversations.create", NULL, form.s, 0, &ans, err);
    dg_buf_free(&form);
    if (rc != DG_OK)
        return rc;
    char id[DG_SLACK_ID_LEN];
    dgs_copy_str(json_object_get(ans, "channel"), "id", id, sizeof id);
    json_decref(ans);
    if (!dg_slack_channel_id_valid(id))
        return dgs_fail(err, DG_ERR_IO, 200, 0,
                        "Slack answered conversations.create without a channel id; look for "
                        "the channel \"%s\" before creating it again",
                        clean);
    snprintf(channel_id, DG_SLACK_ID_LEN, "%s", id);
    rc = dg_slack_invite(s, id, member_ids, n_members, err);
    if (rc != DG_OK) {
        char first[sizeof err->message];
        snprintf(first, sizeof first, "%s", err->message);
        dgs_fail(err, rc, err->http_status, err->retryable,
                 "channel %s (\"%s\") was created but its members are not all in: %s; invite "
                 "them again or archive the channel",
                 id, clean, first);
    }
    return rc;
}

int dg_slack_archive(dg_slack *s, const char *channel_id, dg_slack_err *err)
{
    dg_slack_err local;
    if (!err)
        err = &local;
    memset(err, 0, sizeof *err);
    if (!dg_slack_channel_id_valid(channel_id))
        return dgs_fail(err, DG_ERR_INVALID, 0, 0,
                        "conversations.archive: the channel id must be C or G and 2..20 "
                        "upper-case letters or digits");
    dg_buf form = {0};
    if (dgs_form_add(&form, "channel", channel_id) != 0) {
        dg_buf_free(&form);
        return dgs_fail(err, DG_ERR_NOMEM, 0, 1, "out of memory");
    }
    json_t *ans = NULL;
    int rc = dgs_call(s, "conversations.archive", NULL, form.s, 1, &ans, err);
    dg_buf_free(&form);
    json_decref(ans);
    if (rc != DG_OK && !strcmp(err->error, "already_archived")) {
        memset(err, 0, sizeof *err);
        return DG_OK;
    }
    return rc;
}

static void channel_of(const json_t *c, dg_slack_channel *out)
{
    memset(out, 0, sizeof *out);
    dgs_copy_str(c, "id", out->id, sizeof out->id);
    dgs_copy_str(c, "name", out->name, sizeof out->name);
    dgs_copy_str(c, "creator", out->creator, sizeof out->creator);
    out->is_private = json_is_true(json_object_get(c, "is_private"));
    out->is_archived = json_is_true(json_object_get(c, "is_archived"));
}

int dg_slack_channel_info(dg_slack *s, const char *channel_id, dg_slack_channel *out,
                          dg_slack_err *err)
{
    memset(out, 0, sizeof *out);
    if (err)
        memset(err, 0, sizeof *err);
    if (!dg_slack_channel_id_valid(channel_id))
        return dgs_fail(err, DG_ERR_INVALID, 0, 0,
                        "conversations.info: the channel id must be C or G and 2..20 upper-case "
                        "letters or digits");
    dg_buf form = {0};
    json_t *ans = NULL;
    int rc = dgs_form_add(&form, "channel", channel_id)
                 ? dgs_fail(err, DG_ERR_NOMEM, 0, 1, "out of memory")
                 : dgs_call(s, "conversations.info", NULL, form.s, 1, &ans, err);
    dg_buf_free(&form);
    if (rc != DG_OK)
        return rc;
    channel_of(json_object_get(ans, "channel"), out);
    json_decref(ans);
    return DG_OK;
}

/* One page of the moderator's private channels: looks for name. */
static int list_page(dg_slack *s, const char *name, char *cursor, size_t cursor_len, int *found,
                     dg_slack_channel *out, dg_slack_err *err)
{
    dg_buf form = {0};
    json_t *ans = NULL;
    int rc = (dgs_form_add(&form, "types", "private_channel") ||
              dgs_form_add(&form, "exclude_archived", "true") ||
              dgs_form_add(&form, "limit", LIST_PAGE) ||
              (cursor[0] && dgs_form_add(&form, "cursor", cursor)))
                 ? dgs_fail(err, DG_ERR_NOMEM, 0, 1, "out of memory")
                 : dgs_call(s, "conversations.list", NULL, form.s, 1, &ans, err);
    dg_buf_free(&form);
    if (rc != DG_OK)
        return rc;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(ans, "channels"), i, c) {
        const char *n = json_string_value(json_object_get(c, "name"));
        if (n && !strcmp(n, name) && !json_is_true(json_object_get(c, "is_archived"))) {
            *found = 1;
            if (out)
                channel_of(c, out);
            break;
        }
    }
    dgs_copy_str(json_object_get(ans, "response_metadata"), "next_cursor", cursor, cursor_len);
    json_decref(ans);
    return DG_OK;
}

int dg_slack_find_private_channel(dg_slack *s, const char *name, int *found, dg_slack_channel *out,
                                  dg_slack_err *err)
{
    *found = 0;
    if (out)
        memset(out, 0, sizeof *out);
    if (err)
        memset(err, 0, sizeof *err);
    char clean[DG_SLACK_MAX_CHANNEL_NAME + 1], why[320], cursor[256] = "";
    if (dg_slack_sanitize_channel_name(name, clean, sizeof clean, NULL, why, sizeof why))
        return dgs_fail(err, DG_ERR_INVALID, 0, 0, "conversations.list: %s", why);
    for (int page = 0; page < LIST_PAGES && !*found; page++) {
        int rc = list_page(s, clean, cursor, sizeof cursor, found, out, err);
        if (rc != DG_OK)
            return rc;
        if (!cursor[0])
            break;
    }
    return DG_OK;
}
