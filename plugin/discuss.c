/*
 * discuss.c -- the discussion state machine (seed 003): validation,
 * create, callback, timers and the admin's forced close. The tool-call
 * ledger (discuss_ledger.c) and the session overrides a closed channel
 * owes (discuss_overrides.c) share discuss_int.h with it.
 *
 * Flow of every state change (architecture.md): checks without holding the
 * store lock where they do I/O (REST, filesystem, host calls), then ONE
 * transaction that records the new state and the effects it owes (outbox
 * rows, override rows), then the effects after commit (outbox kick,
 * session_patch), marked done. A crash in between is repaired by
 * dg_discuss_resume() and by the outbox's own resend.
 */
#include "discuss_int.h"
#include "discuss_archive.h"
#include "store_discuss_index.h"
#include "summary.h"
#include "snowflake.h"

const char *dg_discussion_status_name(dg_discussion_status s)
{
    switch (s) {
    case DG_DISCUSSION_ACTIVE: return "active";
    case DG_DISCUSSION_CLOSED: return "closed";
    default: return "none";
    }
}

void discuss_free_strv(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void dg_discussion_clear(dg_discussion *d)
{
    if (!d)
        return;
    free(d->discussion_channel_id);
    free(d->origin_channel_id);
    free(d->initiator_agent_id);
    free(d->initiator_session_key);
    free(d->initiator_session_id);
    free(d->initiator_workspace);
    free(d->discuss_guide);
    free(d->summary_path);
    discuss_free_strv(d->participants, d->n_participants);
    discuss_free_strv(d->turn_order, d->n_turn_order);
    memset(d, 0, sizeof *d);
}

void dg_channel_created_clear(dg_channel_created *c)
{
    if (!c)
        return;
    free(c->channel_id);
    memset(c, 0, sizeof *c);
}

void dg_callback_result_clear(dg_callback_result *r)
{
    if (!r)
        return;
    free(r->channel_id);
    free(r->origin_channel_id);
    free(r->summary_path);
    memset(r, 0, sizeof *r);
}

void dg_session_refs_release(dg_session_refs *r)
{
    if (!r)
        return;
    free((void *)r->v);
    if (r->release && r->owner)
        r->release(r->owner);
    memset(r, 0, sizeof *r);
}

static int is_blank(const char *s)
{
    for (; s && *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
            return 0;
    return 1;
}

/* ---- in-transaction helpers for other areas ----------------------------- */

int dg_discuss_lookup_locked(dg_store *st, const char *channel_id, dg_discussion *d)
{
    if (!channel_id)
        return DG_DISCUSSION_NONE;
    if (d) {
        int rc = dg_store_discussion_by_channel(st, channel_id, d);
        if (rc == OC_ERR_NOT_FOUND)
            return DG_DISCUSSION_NONE;
        return rc == OC_OK ? (int)d->status : rc;
    }
    dg_discussion_status s;
    int rc = dg_store_discussion_probe(st, channel_id, NULL, &s);
    return rc == OC_OK ? (int)s : rc;
}

int dg_discuss_claim_closed_notice_locked(dg_store *st, const char *channel_id,
                                          const char *message_id, int64_t now_ms,
                                          int64_t cooldown_ms)
{
    if (!channel_id || !message_id)
        return OC_ERR_INVALID;
    int claimed = 0;
    int rc = dg_store_discussion_notice_claim(st, channel_id, message_id, now_ms,
                                              cooldown_ms, &claimed);
    return rc == OC_OK ? claimed : rc;
}

/* ---- validation ----------------------------------------------------------- */

/* Discussion status of a channel in a short read transaction. */
static int channel_status(dg_plugin *p, const char *channel_id, dg_discussion_status *s)
{
    *s = DG_DISCUSSION_NONE;
    if (!channel_id)
        return OC_OK;
    if (dg_store_begin(p->store) != OC_OK)
        return OC_ERR_IO;
    int rc = dg_store_discussion_probe(p->store, channel_id, NULL, s);
    return dg_store_end(p->store, rc);
}

int dg_discuss_validate(dg_plugin *p, const dg_caller *caller,
                        const dg_channel_request *req, char *err, size_t err_len)
{
    char why[256];
    const dg_config *cfg = &p->cfg;
    if (!caller || !caller->agent_id || !*caller->agent_id)
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "the tool context has no agentId; the host must say which agent calls "
                    "discord_channel_create");
    if (!dg_config_agent(cfg, caller->agent_id))
        return dg_fail(err, err_len, OC_ERR_DENIED,
                    "agent '%s' is not in the plugin config `agents`, so it has no Discord "
                    "user id and cannot be a member of the channel; add "
                    "agents.%s.discordUserId to the dirigent config",
                    caller->agent_id, caller->agent_id);
    if (!req->name || !*req->name)
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "name is required: the channel name (lower case, no spaces, 1-100 "
                    "characters), e.g. \"design-review\"");
    if (dg_discord_check_channel_name(req->name, why, sizeof why) != OC_OK)
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "name '%.100s' is not a valid Discord text-channel name: %s; use lower "
                    "case letters, digits and dashes, e.g. \"design-review\"", req->name, why);
    if (req->topic && dg_utf8_count(req->topic) > DG_DISCORD_MAX_TOPIC)
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "topic has %zu characters; Discord allows at most %d: shorten it",
                    dg_utf8_count(req->topic), DG_DISCORD_MAX_TOPIC);
    if (req->parent_id && !dg_snowflake_valid(req->parent_id))
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "parentId '%.100s' is not a Discord snowflake (1-20 digits); pass the "
                    "category's id or leave parentId out", req->parent_id);
    /* A repeated or self-naming entry is a mistake of the caller (it may
     * have meant another agent): refused, not silently dropped. */
    for (size_t i = 0; i < req->n_participants; i++) {
        const char *a = req->participants[i];
        if (!a || !dg_config_agent(cfg, a))
            return dg_fail(err, err_len, OC_ERR_INVALID,
                        "participants[%zu] '%.100s' is not a known agent; participants are agent "
                        "ids from the plugin config `agents` (humans go in allowedUserIds)",
                        i, a ? a : "");
        if (strcmp(a, caller->agent_id) == 0)
            return dg_fail(err, err_len, OC_ERR_INVALID,
                        "participants[%zu] '%s' is you, the caller: you are a member of the "
                        "channel anyway; list only agents other than you", i, a);
        for (size_t j = 0; j < i; j++)
            if (strcmp(req->participants[j], a) == 0)
                return dg_fail(err, err_len, OC_ERR_INVALID,
                            "participants[%zu] '%s' repeats participants[%zu]; name each agent "
                            "once", i, a, j);
    }
    for (size_t i = 0; i < req->n_allowed_user_ids; i++) {
        const char *u = req->allowed_user_ids[i];
        if (!u || !dg_snowflake_valid(u))
            return dg_fail(err, err_len, OC_ERR_INVALID,
                        "allowedUserIds[%zu] '%.100s' is not a Discord user id (a snowflake of "
                        "1-20 digits)", i, u ? u : "");
        for (size_t j = 0; j < i; j++)
            if (strcmp(req->allowed_user_ids[j], u) == 0)
                return dg_fail(err, err_len, OC_ERR_INVALID,
                            "allowedUserIds[%zu] '%s' repeats allowedUserIds[%zu]; name each "
                            "user once", i, u, j);
    }
    if (!req->callback_channel_id) {
        if (req->discuss_guide)
            return dg_fail(err, err_len, OC_ERR_INVALID,
                        "discussGuide is only accepted together with callbackChannelId (the "
                        "channel to report the result to); add callbackChannelId for a "
                        "discussion, or drop discussGuide for a plain channel");
        return OC_OK;
    }

    /* Discussion mode. */
    if (!dg_snowflake_valid(req->callback_channel_id))
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "callbackChannelId '%.100s' is not a Discord channel id (a snowflake of 1-20 "
                    "digits); pass the id of the channel you are working in",
                    req->callback_channel_id);
    if (!req->discuss_guide || is_blank(req->discuss_guide))
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "discussGuide is required with callbackChannelId: say what to discuss, "
                    "what conclusion is wanted and its limits");
    size_t gl = dg_utf8_count(req->discuss_guide);
    if (gl > (size_t)cfg->max_guide_chars)
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "discussGuide has %zu characters, over discussion.maxGuideChars (%ld); "
                    "shorten it", gl, cfg->max_guide_chars);
    if (req->n_participants == 0)
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "participants must name at least one agent other than you for a "
                    "discussion");
    if (!caller->session_key || !*caller->session_key)
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "the tool context has no sessionKey; a discussion records the "
                    "initiator's session");
    if (!caller->workspace_dir || caller->workspace_dir[0] != '/')
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "the tool context has no absolute workspaceDir; a discussion needs the "
                    "initiator's workspace for its summary file");
    /* Only the initiator can end a discussion, with a file in this folder:
     * without it the discussion could never close. */
    struct stat wst;
    const char *why_not = NULL;
    if (stat(caller->workspace_dir, &wst) != 0)
        why_not = strerror(errno);
    else if (!S_ISDIR(wst.st_mode))
        why_not = "not a folder";
    if (why_not)
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "the tool context's workspaceDir %.200s is not an existing folder (%s); a "
                    "discussion needs the initiator's workspace for its summary file, ask the "
                    "operator to create it", caller->workspace_dir, why_not);

    dg_discussion_status here, there;
    if (channel_status(p, caller->channel_id, &here) != OC_OK ||
        channel_status(p, req->callback_channel_id, &there) != OC_OK)
        return dg_fail(err, err_len, OC_ERR_IO, "the plugin's state store failed; try again");
    if (here != DG_DISCUSSION_NONE)
        return dg_fail(err, err_len, OC_ERR_DENIED,
                    "you are inside discussion channel %s: discussions do not nest; finish "
                    "this one (the initiator calls discuss-callback) and open the new one "
                    "from your work channel", caller->channel_id);
    if (there != DG_DISCUSSION_NONE)
        return dg_fail(err, err_len, OC_ERR_DENIED,
                    "callbackChannelId %s is itself a discussion channel: discussions do not "
                    "nest; pass your work channel instead", req->callback_channel_id);
    return OC_OK;
}

/* ---- create ----------------------------------------------------------------- */

/* Append s to a string list unless present; borrowed pointers. */
static void add_unique(const char **v, size_t *n, const char *s)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(v[i], s) == 0)
            return;
    v[(*n)++] = s;
}

/* "<@a> <@b>" for the Discord ids of agents; malloc'd. */
static char *mentions_of(const dg_config *cfg, char *const *agents, size_t n)
{
    size_t cap = 1;
    for (size_t i = 0; i < n; i++)
        cap += 4 + 24;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const dg_agent_cfg *a = dg_config_agent(cfg, agents[i]);
        if (!a)
            continue;
        o += (size_t)snprintf(out + o, cap - o, "%s<@%s>", o ? " " : "", a->discord_user_id);
    }
    return out;
}

static char *channel_ref(const char *id)
{
    char *s = malloc(strlen(id) + 4);
    if (s)
        sprintf(s, "<#%s>", id);
    return s;
}

/* A channel we created but could not record is removed again (best effort),
 * so a failed tool call leaves nothing half-made in Discord either. */
static void delete_channel(dg_plugin *p, const char *channel_id)
{
    char path[64];
    snprintf(path, sizeof path, "/channels/%s", channel_id);
    dg_discord_err derr;
    memset(&derr, 0, sizeof derr);
    int rc = dg_discord_request(p->discord, "DELETE", path, NULL, 1, NULL, &derr);
    if (rc != OC_OK)
        dg_log(p, OC_LOG_ERROR, "discussion: channel %s was created but not recorded and "
               "could not be deleted again: %s", channel_id, derr.message);
}

/* Build the stored discussion for a new channel (borrowing nothing). */
/* {summaryTemplate} of the kickoff: the template file under a line that
 * says what it is for, "" without one. Caller frees; NULL out of memory. */
static char *summary_template_text(const dg_plugin *p)
{
    const char *t = dg_summary_rules_text(p->summary_rules);
    if (!t)
        return strdup("");
    static const char head[] = "Summary template (the summary must contain each of its "
                               "headings on a line of its own):\n";
    size_t tl = strlen(t);
    while (tl && (t[tl - 1] == '\n' || t[tl - 1] == '\r' || t[tl - 1] == ' '))
        tl--;
    /* Ends with a blank line: the built-in kickoff puts it before the next
     * paragraph with no line of its own (nothing shows when it is ""). */
    size_t len = sizeof head + tl + 2;
    char *s = malloc(len);
    if (s)
        snprintf(s, len, "%s%.*s\n\n", head, (int)tl, t);
    return s;
}

/* {summaryPreview} of the result: the preview (summary.h) under a line that
 * says what it is, "" when previewChars is 0 or the file is blank. Caller
 * frees; NULL when out of memory or unreadable. */
static char *preview_of(const dg_plugin *p, int fd)
{
    char *q = dg_summary_preview(fd, p->cfg.preview_chars);
    if (!q || !*q)
        return q;
    static const char head[] = "Summary preview:\n";
    size_t len = sizeof head + strlen(q) + 2;
    char *s = malloc(len);
    if (s)
        snprintf(s, len, "%s%s\n\n", head, q);  /* blank line: as for summaryTemplate */
    free(q);
    return s;
}

char *dg_discuss_suggested_path_locked(const dg_plugin *p, const dg_discussion *d)
{
    char *name = NULL;
    if (dg_store_discussion_name(p->store, d->id, &name) != OC_OK)
        name = NULL;
    char *s = dg_summary_suggested_path(p->cfg.summary_dir, name, d->discussion_channel_id);
    free(name);
    return s;
}

static int build_discussion(dg_plugin *p, const dg_caller *c, const dg_channel_request *req,
                            const char *channel_id, dg_discussion *d)
{
    memset(d, 0, sizeof *d);
    d->discussion_channel_id = strdup(channel_id);
    d->origin_channel_id = strdup(req->callback_channel_id);
    d->initiator_agent_id = strdup(c->agent_id);
    d->initiator_session_key = strdup(c->session_key);
    d->initiator_session_id = strdup(c->session_id && *c->session_id ? c->session_id
                                                                     : c->session_key);
    d->initiator_workspace = strdup(c->workspace_dir);
    d->discuss_guide = strdup(req->discuss_guide);
    d->status = DG_DISCUSSION_ACTIVE;
    d->created_at_ms = dg_now_ms(p);
    d->turn_order = calloc(req->n_participants + 1, sizeof *d->turn_order);
    d->participants = calloc(req->n_participants + 1, sizeof *d->participants);
    if (!d->discussion_channel_id || !d->origin_channel_id || !d->initiator_agent_id ||
        !d->initiator_session_key || !d->initiator_session_id || !d->initiator_workspace ||
        !d->discuss_guide || !d->turn_order || !d->participants)
        return OC_ERR_NOMEM;
    if (!(d->turn_order[d->n_turn_order++] = strdup(c->agent_id)))
        return OC_ERR_NOMEM;
    for (size_t i = 0; i < req->n_participants; i++) {
        const char *a = req->participants[i];
        int dup = 0;
        for (size_t j = 0; j < d->n_turn_order; j++)
            dup |= strcmp(d->turn_order[j], a) == 0;
        if (dup)
            continue;
        if (!(d->turn_order[d->n_turn_order++] = strdup(a)) ||
            !(d->participants[d->n_participants++] = strdup(a)))
            return OC_ERR_NOMEM;
    }
    return OC_OK;
}

/* Record the discussion, prefill its turns and queue the kickoff: one
 * transaction. Returns OC_OK with *id, or a negative status (rolled back). */
static int record_discussion(dg_plugin *p, dg_discussion *d, const char *name,
                             const char *kickoff, const char *const *mention_ids,
                             size_t n_mentions, const discuss_idem *ic, int64_t *id, char *err,
                             size_t err_len)
{
    if (dg_store_begin(p->store) != OC_OK)
        return dg_fail(err, err_len, OC_ERR_IO, "the plugin's state store is busy or failing");
    int rc = dg_store_discussion_insert(p->store, d, id);
    if (rc == OC_OK)
        d->id = *id;
    if (rc == OC_OK)
        rc = dg_store_discussion_set_name(p->store, *id, name);
    if (rc == OC_OK && ic) {
        /* The result, with the effect it reports. */
        dg_tool_call_row res = {.channel_id = d->discussion_channel_id, .discussion_id = *id};
        rc = dg_store_tool_call_done(p->store, ic->tool, ic->call_id, ic->fp, &res,
                                     d->created_at_ms);
    }
    if (rc == OC_OK)
        rc = dg_turns_prefill_discussion(p->turns, d->discussion_channel_id,
                                         d->initiator_agent_id,
                                         (const char *const *)d->turn_order + 1,
                                         d->n_turn_order - 1, d->created_at_ms);
    if (rc == OC_OK)
        rc = dg_outbox_enqueue(p->store, d->discussion_channel_id, kickoff, mention_ids,
                               n_mentions, d->created_at_ms);
    if (rc != OC_OK)
        dg_log(p, OC_LOG_ERROR, "discussion: recording channel %s failed (%s): %s",
               d->discussion_channel_id, oc_status_name(rc), dg_store_errmsg(p->store));
    rc = dg_store_end(p->store, rc);
    if (rc != OC_OK)
        return dg_fail(err, err_len, rc == OC_ERR_CONFLICT ? OC_ERR_CONFLICT : OC_ERR_IO,
                    "the discussion channel could not be recorded (%s); nothing was kept, "
                    "try again", oc_status_name(rc));
    return OC_OK;
}

/* The plain channel's result, recorded after the REST call (the channel is
 * the whole effect). */
static int record_plain(dg_plugin *p, const discuss_idem *ic, const char *channel_id, char *err,
                        size_t err_len)
{
    if (dg_store_begin(p->store) != OC_OK)
        return dg_fail(err, err_len, OC_ERR_IO, "the plugin's state store is busy or failing");
    dg_tool_call_row res = {.channel_id = (char *)channel_id};
    int rc = dg_store_tool_call_done(p->store, ic->tool, ic->call_id, ic->fp, &res,
                                     dg_now_ms(p));
    if (rc != OC_OK)
        dg_log(p, OC_LOG_ERROR, "channel %s: recording the result of toolCallId %s failed "
               "(%s): %s", channel_id, ic->call_id, oc_status_name(rc),
               dg_store_errmsg(p->store));
    rc = dg_store_end(p->store, rc);
    if (rc != OC_OK)
        return dg_fail(err, err_len, OC_ERR_IO, "the channel could not be recorded (%s); nothing "
                    "was kept, try again", oc_status_name(rc));
    return OC_OK;
}

/* Record the intent of ic before the REST call, so that a repeat after a
 * crash knows the channel may exist already. */
static int record_intent(dg_plugin *p, const discuss_idem *ic, char *err, size_t err_len)
{
    if (dg_store_begin(p->store) != OC_OK)
        return dg_fail(err, err_len, OC_ERR_IO, "the plugin's state store is busy or failing");
    int rc = dg_store_tool_call_intent(p->store, ic->tool, ic->call_id, ic->fp, dg_now_ms(p));
    rc = dg_store_end(p->store, rc);
    if (rc != OC_OK)
        return dg_fail(err, err_len, rc == OC_ERR_CONFLICT ? OC_ERR_CONFLICT : OC_ERR_IO,
                    "the plugin's state store could not record this call (%s); nothing was "
                    "done, try again", oc_status_name(rc));
    return OC_OK;
}

/* Topic sent to Discord: the request's, with ic's marker on a line of its
 * own when it fits (*needle: what a later lookup searches the topic for;
 * the whole topic when the marker does not fit). Malloc'd or NULL. */
static int topic_with_marker(const dg_channel_request *req, const discuss_idem *ic, char **topic,
                             const char **needle)
{
    *topic = NULL;
    *needle = NULL;
    if (!ic)
        return OC_OK;
    size_t ml = strlen(ic->marker);
    if (!req->topic) {
        *needle = ic->marker;
        return (*topic = strdup(ic->marker)) ? OC_OK : OC_ERR_NOMEM;
    }
    if (dg_utf8_count(req->topic) + 1 + ml > DG_DISCORD_MAX_TOPIC) {
        *needle = req->topic;
        return OC_OK;
    }
    size_t n = strlen(req->topic) + 1 + ml + 1;
    if (!(*topic = malloc(n)))
        return OC_ERR_NOMEM;
    snprintf(*topic, n, "%s\n%s", req->topic, ic->marker);
    *needle = ic->marker;
    return OC_OK;
}

static int create_channel(dg_plugin *p, const dg_caller *caller, const dg_channel_request *req,
                          discuss_idem *ic, dg_channel_created *out, char *err, size_t err_len)
{
    int rc = dg_discuss_validate(p, caller, req, err, err_len);
    if (rc != OC_OK)
        return rc;
    if (!p->discord)
        return dg_fail(err, err_len, OC_ERR_UNSUPPORTED,
                    "the moderator bot has no token (discord.moderatorToken or env "
                    "DIRIGENT_MODERATOR_TOKEN), so no channel can be created; ask the operator");
    if (!p->cfg.discord_guild_id)
        return dg_fail(err, err_len, OC_ERR_UNSUPPORTED,
                    "discord.guildId is not configured, so no channel can be created; ask "
                    "the operator to set it");
    /* discord.moderatorUserId is required by the config (config.c). */

    /* Members: initiator, participants, allowed users, moderator. */
    size_t cap = 2 + req->n_participants + req->n_allowed_user_ids;
    const char **members = calloc(cap, sizeof *members);
    if (!members)
        return dg_fail(err, err_len, OC_ERR_NOMEM, "out of memory");
    size_t nm = 0;
    add_unique(members, &nm, dg_config_agent(&p->cfg, caller->agent_id)->discord_user_id);
    for (size_t i = 0; i < req->n_participants; i++)
        add_unique(members, &nm, dg_config_agent(&p->cfg, req->participants[i])->discord_user_id);
    for (size_t i = 0; i < req->n_allowed_user_ids; i++)
        add_unique(members, &nm, req->allowed_user_ids[i]);
    add_unique(members, &nm, p->cfg.moderator_user_id);

    char *topic = NULL;
    const char *needle = NULL;
    if (topic_with_marker(req, ic, &topic, &needle) != OC_OK) {
        free(members);
        return dg_fail(err, err_len, OC_ERR_NOMEM, "out of memory");
    }
    if (ic && !ic->recovering && (rc = record_intent(p, ic, err, err_len)) != OC_OK) {
        free(topic);
        free(members);
        return rc;
    }
    dg_discord_channel_spec spec = {
        .guild_id = p->cfg.discord_guild_id,
        .name = req->name,
        .topic = topic ? topic : req->topic,
        .parent_id = req->parent_id,
        .member_ids = members,
        .n_members = nm,
    };
    char *channel_id = NULL;
    dg_discord_err derr;
    memset(&derr, 0, sizeof derr);
    rc = OC_OK;
    if (ic && ic->recovering) {
        /* An earlier attempt of this call recorded its intent and never its
         * result: it may have created the channel before it died. */
        rc = dg_discord_find_channel(p->discord, p->cfg.discord_guild_id, req->name, needle,
                                     &channel_id, &derr);
        if (rc != OC_OK) {
            dg_log(p, OC_LOG_WARN, "discord_channel_create '%s' (toolCallId %s): could not "
                   "list the guild's channels: %s", req->name, ic->call_id, derr.message);
            free(topic);
            free(members);
            return dg_fail(err, err_len, rc,
                        "could not check whether an earlier attempt of this call already "
                        "created channel '%s' (Discord: %s); nothing was created, try again",
                        req->name, derr.message);
        }
        if (channel_id)
            dg_log(p, OC_LOG_INFO, "discord_channel_create '%s' (toolCallId %s): channel %s, "
                   "made by an earlier attempt that died before recording it, is used instead "
                   "of a new one", req->name, ic->call_id, channel_id);
    }
    if (!channel_id)
        rc = dg_discord_create_private_channel(p->discord, &spec, &channel_id, &derr);
    free(topic);
    free(members);
    if (rc != OC_OK) {
        dg_log(p, OC_LOG_WARN, "discord_channel_create '%s' by %s failed: %s (HTTP %ld)",
               req->name, caller->agent_id, derr.message, derr.http_status);
        return dg_fail(err, err_len, rc,
                    "Discord refused to create channel '%s' (HTTP %ld): %s%s", req->name,
                    derr.http_status, derr.message,
                    derr.http_status == 403 ? "; the moderator bot lacks a permission in "
                    "the guild (Manage Channels), ask the operator"
                    : derr.retryable ? "; this may pass if you try again later" : "");
    }
    if (!req->callback_channel_id) {
        if (ic && (rc = record_plain(p, ic, channel_id, err, err_len)) != OC_OK) {
            delete_channel(p, channel_id);
            free(channel_id);
            return rc;
        }
        out->channel_id = channel_id;
        dg_log(p, OC_LOG_INFO, "channel %s '%s' created for %s (plain)", channel_id, req->name,
               caller->agent_id);
        return OC_OK;
    }

    /* Discussion: render the kickoff, then one transaction. */
    dg_discussion d;
    char *pm = NULL, *im = NULL, *oref = NULL, *dref = NULL, *kickoff = NULL, *where = NULL;
    char *tpl = NULL;
    const char **mention_ids = NULL;
    rc = build_discussion(p, caller, req, channel_id, &d);
    if (rc == OC_OK) {
        char *first = d.turn_order[0];
        pm = mentions_of(&p->cfg, d.participants, d.n_participants);
        im = mentions_of(&p->cfg, &first, 1);
        oref = channel_ref(d.origin_channel_id);
        dref = channel_ref(channel_id);
        mention_ids = calloc(d.n_turn_order, sizeof *mention_ids);
        where = dg_summary_suggested_path(p->cfg.summary_dir, req->name, channel_id);
        tpl = summary_template_text(p);
        if (!pm || !im || !oref || !dref || !mention_ids || !where || !tpl)
            rc = OC_ERR_NOMEM;
    }
    if (rc == OC_OK) {
        for (size_t i = 0; i < d.n_turn_order; i++)
            mention_ids[i] = dg_config_agent(&p->cfg, d.turn_order[i])->discord_user_id;
        dg_tpl_vars v = {
            .discussGuide = d.discuss_guide,
            .initiatorMention = im,
            .participantMentions = pm,
            .discussionChannel = dref,
            .originChannel = oref,
            .status = "active",
            .summaryPath = where,
            .summaryTemplate = tpl,
        };
        kickoff = dg_templates_render(p->templates, "kickoff.md", &v);
        if (!kickoff)
            rc = OC_ERR_NOMEM;
    }
    int64_t id = 0;
    if (rc == OC_OK)
        rc = record_discussion(p, &d, req->name, kickoff, mention_ids, d.n_turn_order, ic, &id,
                               err, err_len);
    else
        dg_fail(err, err_len, rc, "out of memory preparing the discussion; try again");
    free(pm);
    free(im);
    free(oref);
    free(dref);
    free(kickoff);
    free(where);
    free(tpl);
    free(mention_ids);
    if (rc != OC_OK) {
        delete_channel(p, channel_id);
        free(channel_id);
        dg_discussion_clear(&d);
        return rc;
    }
    dg_outbox_kick(p->outbox);
    dg_log(p, OC_LOG_INFO, "discussion %lld opened in channel %s by %s (origin %s, %zu agents)",
           (long long)id, channel_id, caller->agent_id, d.origin_channel_id, d.n_turn_order);
    dg_discussion_clear(&d);
    out->channel_id = channel_id;
    out->is_discussion = 1;
    out->discussion_id = id;
    return OC_OK;
}

int dg_discuss_create_channel(dg_plugin *p, const dg_caller *caller,
                              const dg_channel_request *req,
                              dg_channel_created *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (!caller || !caller->tool_call_id)
        return create_channel(p, caller, req, NULL, out, err, err_len);
    discuss_idem ic;
    discuss_idem_for_create(&ic, caller, req);
    int rc = discuss_inflight_claim(p, &ic);
    if (rc == OC_ERR_CONFLICT)
        return dg_fail(err, err_len, OC_ERR_CONFLICT,
                    "a call with toolCallId %s is still running; wait for its result instead "
                    "of calling again", ic.call_id);
    if (rc != OC_OK)
        return dg_fail(err, err_len, rc, "out of memory");
    dg_tool_call_row row;
    rc = discuss_idem_lookup(p, &ic, &row);
    if (rc != OC_OK) {
        rc = dg_fail(err, err_len, OC_ERR_IO, "the plugin's state store failed (%s); try again",
                  oc_status_name(rc));
    } else if (row.state == DG_TOOL_CALL_DONE) {
        /* Answered before (the host lost the answer): the same result, and
         * nothing done again. */
        if (!row.channel_id) {
            rc = dg_fail(err, err_len, OC_ERR_INTERNAL, "the stored result of toolCallId %s has "
                      "no channel; this is a bug, report it", ic.call_id);
        } else {
            out->channel_id = row.channel_id;
            row.channel_id = NULL;
            out->is_discussion = row.discussion_id != 0;
            out->discussion_id = row.discussion_id;
            dg_log(p, OC_LOG_INFO, "discord_channel_create: toolCallId %s was answered before "
                   "(channel %s); the same result is returned, nothing is done again",
                   ic.call_id, out->channel_id);
        }
    } else {
        ic.recovering = row.state == DG_TOOL_CALL_PENDING;
        rc = create_channel(p, caller, req, &ic, out, err, err_len);
    }
    dg_tool_call_row_clear(&row);
    discuss_inflight_release(p, &ic);
    return rc;
}

/* ---- callback ------------------------------------------------------------------ */

/* The read-only checks of the contract's order, on the stored row. */
static int check_callable(dg_plugin *p, const dg_caller *c, dg_discussion *d, char *err,
                          size_t err_len)
{
    if (!c->channel_id || !*c->channel_id)
        return dg_fail(err, err_len, OC_ERR_NOT_FOUND,
                    "discuss-callback only works inside a discussion channel, and this call "
                    "has no channel; call it from the discussion channel");
    if (dg_store_begin(p->store) != OC_OK)
        return dg_fail(err, err_len, OC_ERR_IO, "the plugin's state store is busy or failing");
    int rc = dg_store_discussion_by_channel(p->store, c->channel_id, d);
    dg_store_commit(p->store);
    if (rc == OC_ERR_NOT_FOUND)
        return dg_fail(err, err_len, OC_ERR_NOT_FOUND,
                    "channel %s is not a discussion channel: discuss-callback only works "
                    "inside a channel opened by discord_channel_create with "
                    "callbackChannelId", c->channel_id);
    if (rc != OC_OK)
        return dg_fail(err, err_len, OC_ERR_IO, "the plugin's state store failed (%s); try again",
                    oc_status_name(rc));
    if (!c->agent_id || strcmp(c->agent_id, d->initiator_agent_id) != 0)
        return dg_fail(err, err_len, OC_ERR_DENIED,
                    "only the initiator of this discussion (agent '%s') may end it; you are "
                    "'%s'. If the goal is reached, say so in the channel so the initiator "
                    "writes the summary and calls discuss-callback",
                    d->initiator_agent_id, c->agent_id ? c->agent_id : "");
    if (d->status != DG_DISCUSSION_ACTIVE)
        return dg_fail(err, err_len, OC_ERR_CONFLICT,
                    "this discussion is already closed (summary %s); nothing more to do here: "
                    "continue the original task in <#%s>",
                    d->summary_path ? d->summary_path : "?", d->origin_channel_id);
    return OC_OK;
}

/* The closing transaction. */
static int close_discussion(dg_plugin *p, const dg_discussion *d, const char *rel_path,
                            const dg_session_refs *sessions, const char *result,
                            const char *initiator_uid, const discuss_idem *ic, int64_t now,
                            char *err, size_t err_len)
{
    if (dg_store_begin(p->store) != OC_OK)
        return dg_fail(err, err_len, OC_ERR_IO, "the plugin's state store is busy or failing");
    int rc = dg_store_discussion_close(p->store, d->id, rel_path, now);
    if (rc == OC_OK && ic) {
        dg_tool_call_row res = {.channel_id = d->discussion_channel_id,
                                .discussion_id = d->id,
                                .origin_channel_id = d->origin_channel_id,
                                .summary_path = (char *)rel_path};
        rc = dg_store_tool_call_done(p->store, ic->tool, ic->call_id, ic->fp, &res, now);
    }
    for (size_t i = 0; rc == OC_OK && i < sessions->n; i++)
        rc = dg_store_discussion_override_add(p->store, d->id, sessions->v[i].session_key,
                                              sessions->v[i].agent_id, now, NULL);
    if (rc == OC_OK)
        rc = dg_turns_close_channel(p->turns, d->discussion_channel_id, now);
    if (rc == OC_OK)
        rc = dg_turns_wake_with_result(p->turns, d->origin_channel_id, d->initiator_agent_id,
                                       now);
    if (rc == OC_OK) {
        const char *mention[1] = {initiator_uid};
        rc = dg_outbox_enqueue(p->store, d->origin_channel_id, result, mention,
                               initiator_uid ? 1 : 0, now);
    }
    if (rc == OC_OK)
        rc = dg_discuss_archive_locked(p, d, "completed", rel_path, now);
    if (rc != OC_OK && rc != OC_ERR_CONFLICT)
        dg_log(p, OC_LOG_ERROR, "discussion %lld: closing failed (%s): %s",
               (long long)d->id, oc_status_name(rc), dg_store_errmsg(p->store));
    rc = dg_store_end(p->store, rc);
    if (rc == OC_ERR_CONFLICT)
        return dg_fail(err, err_len, OC_ERR_CONFLICT,
                    "this discussion was closed a moment ago by another discuss-callback; "
                    "nothing more to do here: continue in <#%s>", d->origin_channel_id);
    if (rc != OC_OK)
        return dg_fail(err, err_len, OC_ERR_IO, "closing the discussion failed (%s); nothing "
                    "changed, try again", oc_status_name(rc));
    return OC_OK;
}

/* The stored result of a callback into *out: 1 when there is one. */
static int callback_answered(dg_plugin *p, const discuss_idem *ic, dg_callback_result *out)
{
    dg_tool_call_row row;
    if (discuss_idem_lookup(p, ic, &row) != OC_OK || row.state != DG_TOOL_CALL_DONE ||
        !row.channel_id || !row.origin_channel_id || !row.summary_path) {
        dg_tool_call_row_clear(&row);
        return 0;
    }
    out->discussion_id = row.discussion_id;
    out->channel_id = row.channel_id;
    out->origin_channel_id = row.origin_channel_id;
    out->summary_path = row.summary_path;
    memset(&row, 0, sizeof row);
    dg_log(p, OC_LOG_INFO, "discuss-callback: toolCallId %s was answered before (discussion "
           "%lld closed); the same result is returned, nothing is done again", ic->call_id,
           (long long)out->discussion_id);
    return 1;
}

static int callback_once(dg_plugin *p, const dg_caller *caller, const char *summary_path,
                         const dg_session_refs *sessions, const discuss_idem *ic,
                         dg_callback_result *out, char *err, size_t err_len);

int dg_discuss_callback(dg_plugin *p, const dg_caller *caller, const char *summary_path,
                        const dg_session_refs *sessions, dg_callback_result *out, char *err,
                        size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (!caller || !caller->tool_call_id)
        return callback_once(p, caller, summary_path, sessions, NULL, out, err, err_len);
    discuss_idem ic;
    discuss_idem_for_callback(&ic, caller, summary_path);
    if (callback_answered(p, &ic, out))
        return OC_OK;
    int rc = callback_once(p, caller, summary_path, sessions, &ic, out, err, err_len);
    /* A repeat that raced with its first call (both passed the lookup):
     * the first closed the discussion, this one gets its result. */
    if (rc == OC_ERR_CONFLICT && callback_answered(p, &ic, out))
        return OC_OK;
    return rc;
}

/* Length of the white-space character at s (n bytes left), 0 if none:
 * ASCII space, tab, line breaks, and the UTF-8 spaces an editor may leave
 * (no-break, the U+2000 block, zero width, ideographic, byte-order mark). */
static size_t space_len(const unsigned char *s, size_t n)
{
    if (*s == ' ' || (*s >= '\t' && *s <= '\r'))
        return 1;
    if (n >= 2 && s[0] == 0xC2 && s[1] == 0xA0)
        return 2;
    if (n >= 3 && s[0] == 0xE2 && s[1] == 0x80 && (s[2] <= 0x8B || s[2] == 0xAF))
        return 3;
    if (n >= 3 && s[0] == 0xE2 && s[1] == 0x81 && s[2] == 0x9F)
        return 3;
    if (n >= 3 && s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x80)
        return 3;
    if (n >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF)
        return 3;
    return 0;
}

/* Issue 12 bug 2: a summary needs at least one character that is not white
 * space. Reads fd from its start (it is within maxSummaryBytes already).
 * Returns OC_OK, OC_ERR_INVALID with a sentence, or OC_ERR_IO. */
static int check_summary_text(int fd, const char *path, char *err, size_t err_len)
{
    unsigned char buf[8192 + 4];
    size_t keep = 0;
    for (;;) {
        ssize_t r = read(fd, buf + keep, sizeof buf - 4 - keep);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return dg_fail(err, err_len, OC_ERR_IO, "summaryPath %.120s cannot be read: %s",
                           path, strerror(errno));
        size_t n = keep + (size_t)r, i = 0;
        while (i < n) {
            size_t l = space_len(buf + i, n - i);
            if (l)
                i += l;
            else if (r > 0 && n - i < 3 && buf[i] >= 0xC2)
                break; /* a multi-byte character cut by the read: finish it next time */
            else
                return OC_OK;
        }
        if (r == 0)
            break;
        keep = n - i;
        memmove(buf, buf + i, keep);
    }
    return dg_fail(err, err_len, OC_ERR_INVALID,
                   "summaryPath %.120s is empty or only white space; a summary needs at least "
                   "one character that is not a space: write the summary into it and call "
                   "discuss-callback again (nothing was changed)", path);
}

static int callback_once(dg_plugin *p, const dg_caller *caller, const char *summary_path,
                         const dg_session_refs *sessions, const discuss_idem *ic,
                         dg_callback_result *out, char *err, size_t err_len)
{
    dg_discussion d;
    memset(&d, 0, sizeof d);
    int rc = check_callable(p, caller, &d, err, err_len);
    if (rc != OC_OK) {
        dg_discussion_clear(&d);
        return rc;
    }
    /* The file, resolved and opened once inside the stored workspace. */
    dg_workspace_file f;
    rc = dg_summary_open(d.initiator_workspace, p->cfg.summary_dir, summary_path,
                         p->cfg.max_summary_bytes, &f, err, err_len);
    if (rc != OC_OK) {
        dg_discussion_clear(&d);
        return rc;
    }
    rc = check_summary_text(f.fd, summary_path, err, err_len);
    if (rc == OC_OK)
        rc = dg_summary_check_headings(p->summary_rules, f.fd, f.rel_path, err, err_len);
    char *preview = rc == OC_OK ? preview_of(p, f.fd) : NULL;
    if (rc == OC_OK && !preview)
        rc = dg_fail(err, err_len, OC_ERR_IO, "summaryPath %.120s could not be read for its "
                     "preview; nothing changed, try again", f.rel_path);
    close(f.fd);
    f.fd = -1;
    if (rc != OC_OK) {
        dg_workspace_file_close(&f);
        dg_discussion_clear(&d);
        return rc;
    }

    const dg_agent_cfg *ini = dg_config_agent(&p->cfg, d.initiator_agent_id);
    char *im = ini ? mentions_of(&p->cfg, &d.initiator_agent_id, 1) : strdup("");
    char *dref = channel_ref(d.discussion_channel_id);
    char *oref = channel_ref(d.origin_channel_id);
    char *result = NULL;
    rc = sessions && !sessions->unavailable ? OC_OK : OC_ERR_NOMEM;
    if (rc == OC_OK && im && dref && oref) {
        dg_tpl_vars v = {
            .discussGuide = d.discuss_guide,
            .initiatorMention = im,
            .summaryPath = f.rel_path,
            .discussionChannel = dref,
            .originChannel = oref,
            .status = "completed",
            .summaryPreview = preview,
        };
        result = dg_templates_render(p->templates, "result.md", &v);
    }
    int64_t now = dg_now_ms(p);
    if (rc == OC_OK && result)
        rc = close_discussion(p, &d, f.rel_path, sessions, result,
                              ini ? ini->discord_user_id : NULL, ic, now, err, err_len);
    else
        rc = dg_fail(err, err_len, OC_ERR_NOMEM, "out of memory; nothing changed, try again");
    free(im);
    free(dref);
    free(oref);
    free(result);
    free(preview);
    if (rc == OC_OK) {
        dg_outbox_kick(p->outbox);
        size_t applied = discuss_apply_pending(p);
        dg_log(p, OC_LOG_INFO, "discussion %lld in %s closed by %s: summary %s, %zu session "
               "override(s) recorded, %zu applied", (long long)d.id, d.discussion_channel_id,
               d.initiator_agent_id, f.rel_path, sessions->n, applied);
        out->discussion_id = d.id;
        out->channel_id = d.discussion_channel_id;
        out->origin_channel_id = d.origin_channel_id;
        out->summary_path = f.rel_path;
        d.discussion_channel_id = NULL;
        d.origin_channel_id = NULL;
        f.rel_path = NULL;
    }
    dg_workspace_file_close(&f);
    dg_discussion_clear(&d);
    return rc;
}

/* ---- timers: quiet-time reminder, lifetime wrap-up and expiry (issue 16) ------ */

/* Due discussions handled per sweep pass (the rest come next pass). */
#define TIMER_BATCH 16

typedef enum timer_action { TIMER_NONE, TIMER_REMIND, TIMER_WRAPUP, TIMER_EXPIRE } timer_action;

static timer_action timer_due(const dg_discussion *d, int64_t now, int64_t rem, int64_t life)
{
    int64_t activity = d->last_activity_ms ? d->last_activity_ms : d->created_at_ms;
    if (life > 0 && d->wrapup_at_ms && d->wrapup_at_ms + life <= now)
        return TIMER_EXPIRE;
    if (life > 0 && !d->wrapup_at_ms && d->created_at_ms + life <= now)
        return TIMER_WRAPUP;
    if (rem > 0 && activity + rem <= now && d->reminded_for_ms != activity)
        return TIMER_REMIND;
    return TIMER_NONE;
}

/* The text an expired discussion's result message shows for its summary. */
#define EXPIRED_SUMMARY "none (the discussion expired before the initiator wrote a summary)"

/* One due discussion in its own transaction: the state change and the
 * message it owes are committed together, so each happens exactly once
 * (a restart finds the stored state and does not repeat it). Returns 1
 * when a message was queued. */
static int timer_one(dg_plugin *p, const char *channel, int64_t now, int64_t rem, int64_t life)
{
    dg_store *st = p->store;
    if (dg_store_begin(st) != OC_OK)
        return 0;
    dg_discussion d;
    int rc = dg_store_discussion_by_channel(st, channel, &d);
    timer_action act = rc == OC_OK && d.status == DG_DISCUSSION_ACTIVE
                     ? timer_due(&d, now, rem, life) : TIMER_NONE;
    if (act == TIMER_NONE) {
        if (rc == OC_OK || rc == OC_ERR_NOT_FOUND)
            dg_store_commit(st);
        else
            dg_store_rollback(st);
        dg_discussion_clear(&d);
        return 0;
    }
    const dg_agent_cfg *ini = dg_config_agent(&p->cfg, d.initiator_agent_id);
    const char *uid = ini ? ini->discord_user_id : NULL;
    const char *mention[1] = {uid};
    char *im = mentions_of(&p->cfg, &d.initiator_agent_id, 1);
    char *dref = channel_ref(d.discussion_channel_id);
    char *oref = channel_ref(d.origin_channel_id);
    char *text = NULL, *where = NULL;
    int64_t activity = d.last_activity_ms ? d.last_activity_ms : d.created_at_ms;
    if (act != TIMER_EXPIRE)
        where = dg_discuss_suggested_path_locked(p, &d);
    if (im && dref && oref && (act == TIMER_EXPIRE || where)) {
        dg_tpl_vars v = {.discussGuide = d.discuss_guide, .initiatorMention = im,
                         .discussionChannel = dref, .originChannel = oref,
                         .status = act == TIMER_EXPIRE ? "expired" : "active",
                         .summaryPath = act == TIMER_EXPIRE ? EXPIRED_SUMMARY : where};
        text = dg_templates_render(p->templates, act == TIMER_REMIND ? "timeout.md"
                                   : act == TIMER_WRAPUP ? "wrapup.md" : "result.md", &v);
    }
    rc = text ? OC_OK : OC_ERR_NOMEM;
    if (act == TIMER_EXPIRE) {
        if (rc == OC_OK)
            rc = dg_store_discussion_close_as(st, d.id, NULL, now, "expired");
        if (rc == OC_OK)
            rc = dg_turns_close_channel(p->turns, d.discussion_channel_id, now);
        if (rc == OC_OK)
            rc = dg_turns_wake_with_result(p->turns, d.origin_channel_id, d.initiator_agent_id, now);
        if (rc == OC_OK)
            rc = dg_outbox_enqueue(st, d.origin_channel_id, text, mention, uid ? 1 : 0, now);
        if (rc == OC_OK)
            rc = dg_discuss_archive_locked(p, &d, "expired", NULL, now);
    } else {
        /* The wrap-up request also answers the current quiet period. */
        if (rc == OC_OK && act == TIMER_WRAPUP)
            rc = dg_store_discussion_mark_wrapup(st, d.id, now);
        if (rc == OC_OK)
            rc = dg_store_discussion_mark_reminded(st, d.id, activity);
        if (rc == OC_OK)
            rc = dg_turns_wake_with_result(p->turns, d.discussion_channel_id, d.initiator_agent_id,
                                           now);
        if (rc == OC_OK)
            rc = dg_outbox_enqueue(st, d.discussion_channel_id, text, mention, uid ? 1 : 0,
                                   now);
    }
    rc = dg_store_end(st, rc);
    static const char *const what[] = {"", "quiet-time reminder (discussion.reminderAfterSec)",
                                       "wrap-up request (discussion.maxLifetimeSec)",
                                       "expiry (twice discussion.maxLifetimeSec)"};
    if (rc == OC_OK)
        dg_log(p, OC_LOG_INFO, "discussion %lld in %s: %s%s", (long long)d.id,
               d.discussion_channel_id, what[act],
               act == TIMER_EXPIRE ? ": closed with status expired, no summary; the result "
               "went to the origin channel" : ": queued to the initiator, who has the turn");
    else
        dg_log(p, OC_LOG_ERROR, "discussion %lld in %s: the %s failed (%s); retried shortly",
               (long long)d.id, d.discussion_channel_id, what[act], oc_status_name(rc));
    free(im);
    free(dref);
    free(oref);
    free(text);
    free(where);
    dg_discussion_clear(&d);
    return rc == OC_OK;
}

void dg_discuss_sweep(dg_plugin *p)
{
    int64_t rem = (int64_t)p->cfg.reminder_after_sec * 1000;
    int64_t life = (int64_t)p->cfg.max_lifetime_sec * 1000;
    if ((rem <= 0 && life <= 0) || !p->store || !p->templates)
        return;
    int64_t now = dg_now_ms(p);
    char **ch = NULL;
    size_t n = 0;
    if (dg_store_begin(p->store) != OC_OK)
        return;
    int rc = dg_store_discussion_timers_due(p->store, now, rem, life, TIMER_BATCH, &ch, &n);
    dg_store_end(p->store, rc);
    int kick = 0;
    for (size_t i = 0; i < n; i++) {
        kick |= timer_one(p, ch[i], now, rem, life);
        free(ch[i]);
    }
    free(ch);
    if (kick)
        dg_outbox_kick(p->outbox);
}

/* ---- forced close by an admin (issue 16 item 2) --------------------------------- */

#define ADMIN_NO_SUMMARY "none (closed by an admin without a summary)"

/* The reply template name (admin_*.md) rendered with v into msg; OC_OK
 * (a template that cannot be rendered leaves msg empty, and says so in
 * the log). */
static int admin_reply(dg_plugin *p, const char *name, const dg_tpl_vars *v, char *msg,
                       size_t msg_len)
{
    static const dg_tpl_vars none;
    char *text = p->templates ? dg_templates_render_trim(p->templates, name, v ? v : &none)
                              : NULL;
    if (!text)
        dg_log(p, OC_LOG_ERROR, "discussion: template %s could not be rendered", name);
    snprintf(msg, msg_len, "%s", text ? text : "");
    free(text);
    return OC_OK;
}

int dg_discuss_admin_close_locked(dg_plugin *p, const char *channel_id,
                                  const char *summary_path, int64_t now_ms, int *closed,
                                  char *msg, size_t msg_len)
{
    *closed = 0;
    dg_store *st = p->store;
    dg_discussion d;
    int rc = dg_store_discussion_by_channel(st, channel_id, &d);
    if (rc == OC_ERR_NOT_FOUND)
        return admin_reply(p, "admin_close_not_discussion.md", NULL, msg, msg_len);
    if (rc != OC_OK)
        return rc;
    if (d.status != DG_DISCUSSION_ACTIVE) {
        dg_discussion_clear(&d);
        return admin_reply(p, "admin_close_already.md", NULL, msg, msg_len);
    }
    dg_workspace_file f = {.fd = -1};
    char why[384], *preview = NULL;
    if (summary_path) {
        rc = dg_summary_open(d.initiator_workspace, p->cfg.summary_dir, summary_path,
                             p->cfg.max_summary_bytes, &f, why, sizeof why);
        if (rc == OC_OK) {
            rc = check_summary_text(f.fd, summary_path, why, sizeof why);
            if (rc == OC_OK && !(preview = preview_of(p, f.fd)))
                rc = dg_fail(why, sizeof why, OC_ERR_IO, "it could not be read");
            close(f.fd);
            f.fd = -1;
        }
        if (rc != OC_OK) {
            dg_workspace_file_close(&f);
            dg_discussion_clear(&d);
            dg_tpl_vars v = {.error = oc_status_name(rc), .reason = why};
            return admin_reply(p, "admin_close_refused.md", &v, msg, msg_len);
        }
    }
    const dg_agent_cfg *ini = dg_config_agent(&p->cfg, d.initiator_agent_id);
    const char *uid = ini ? ini->discord_user_id : NULL;
    const char *mention[1] = {uid};
    char *im = mentions_of(&p->cfg, &d.initiator_agent_id, 1);
    char *dref = channel_ref(d.discussion_channel_id);
    char *oref = channel_ref(d.origin_channel_id);
    char *text = NULL;
    if (im && dref && oref) {
        dg_tpl_vars v = {.discussGuide = d.discuss_guide, .initiatorMention = im,
                         .summaryPath = f.rel_path ? f.rel_path : ADMIN_NO_SUMMARY,
                         .discussionChannel = dref, .originChannel = oref,
                         .status = "closed-by-admin", .summaryPreview = preview};
        text = dg_templates_render(p->templates, "result.md", &v);
    }
    rc = text ? OC_OK : OC_ERR_NOMEM;
    if (rc == OC_OK)
        rc = dg_store_discussion_close_as(st, d.id, f.rel_path, now_ms, "closed-by-admin");
    if (rc == OC_OK)
        rc = dg_turns_close_channel(p->turns, d.discussion_channel_id, now_ms);
    if (rc == OC_OK)
        rc = dg_turns_wake_with_result(p->turns, d.origin_channel_id, d.initiator_agent_id, now_ms);
    if (rc == OC_OK)
        rc = dg_outbox_enqueue(st, d.origin_channel_id, text, mention, uid ? 1 : 0, now_ms);
    if (rc == OC_OK)
        rc = dg_discuss_archive_locked(p, &d, "closed-by-admin", f.rel_path, now_ms);
    if (rc == OC_OK) {
        *closed = 1;
        dg_tpl_vars v = {.summaryPath = f.rel_path, .originChannel = oref};
        admin_reply(p, f.rel_path ? "admin_close_done.md" : "admin_close_done_nosummary.md", &v,
                    msg, msg_len);
        dg_log(p, OC_LOG_INFO, "discussion %lld in %s closed by an admin (summary %s)",
               (long long)d.id, d.discussion_channel_id, f.rel_path ? f.rel_path : "none");
    }
    free(im);
    free(dref);
    free(oref);
    free(text);
    free(preview);
    dg_workspace_file_close(&f);
    dg_discussion_clear(&d);
    return rc;
}
