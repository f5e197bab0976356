/*
 * discuss_create.c -- discord_channel_create: the members, the recovery of
 * a channel an earlier attempt of the same call made, the REST call, and
 * for a discussion its kickoff and the one transaction that records it.
 * A channel that cannot be recorded is deleted again.
 */
#include "discuss_int.h"
#include "store_discuss_index.h"
#include "summary.h"

/* Append s to a string list unless present; borrowed pointers. */
static void add_unique(const char **v, size_t *n, const char *s)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(v[i], s) == 0)
            return;
    v[(*n)++] = s;
}

/* A channel we created but could not record is removed again (best effort),
 * so a failed tool call leaves nothing half-made on the platform either. */
static void delete_channel(dg_plugin *p, const char *channel_id)
{
    dg_chat_err derr;
    memset(&derr, 0, sizeof derr);
    dg_chat *chat = dg_plugin_chat(p, dg_platform_of_channel(channel_id));
    int rc = chat ? dg_chat_room_remove(chat, channel_id, &derr) : DG_ERR_UNSUPPORTED;
    if (!chat)
        snprintf(derr.message, sizeof derr.message, "no moderator client for its platform");
    if (rc != DG_OK)
        dg_log(p, OC_LOG_ERROR,
               "discussion: channel %s was created but not recorded and "
               "could not be deleted again: %s",
               channel_id, derr.message);
}

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

/* Build the stored discussion for a new channel (borrowing nothing). */
static int build_discussion(dg_plugin *p, const dg_caller *c, const dg_channel_request *req,
                            const char *channel_id, dg_discussion *d)
{
    memset(d, 0, sizeof *d);
    d->discussion_channel_id = strdup(channel_id);
    d->origin_channel_id = strdup(req->callback_channel_id);
    d->initiator_agent_id = strdup(c->agent_id);
    d->initiator_session_key = strdup(c->session_key);
    d->initiator_session_id =
        strdup(c->session_id && *c->session_id ? c->session_id : c->session_key);
    d->initiator_workspace = strdup(c->workspace_dir);
    d->discuss_guide = strdup(req->discuss_guide);
    d->status = DG_DISCUSSION_ACTIVE;
    d->platform = dg_platform_name(dg_platform_of_channel(channel_id));
    d->created_at_ms = dg_now_ms(p);
    d->turn_order = calloc(req->n_participants + 1, sizeof *d->turn_order);
    d->participants = calloc(req->n_participants + 1, sizeof *d->participants);
    if (!d->discussion_channel_id || !d->origin_channel_id || !d->initiator_agent_id ||
        !d->initiator_session_key || !d->initiator_session_id || !d->initiator_workspace ||
        !d->discuss_guide || !d->turn_order || !d->participants)
        return DG_ERR_NOMEM;
    if (!(d->turn_order[d->n_turn_order++] = strdup(c->agent_id)))
        return DG_ERR_NOMEM;
    for (size_t i = 0; i < req->n_participants; i++) {
        const char *a = req->participants[i];
        int dup = 0;
        for (size_t j = 0; j < d->n_turn_order; j++)
            dup |= strcmp(d->turn_order[j], a) == 0;
        if (dup)
            continue;
        if (!(d->turn_order[d->n_turn_order++] = strdup(a)) ||
            !(d->participants[d->n_participants++] = strdup(a)))
            return DG_ERR_NOMEM;
    }
    return DG_OK;
}

/* Record the discussion, prefill its turns and queue the kickoff: one
 * transaction. Returns DG_OK with *id, or a negative status (rolled back). */
static int record_discussion(dg_plugin *p, dg_discussion *d, const char *name, const char *kickoff,
                             const char *const *mention_ids, size_t n_mentions,
                             const discuss_idem *ic, int64_t *id, char *err, size_t err_len)
{
    if (dg_store_begin(p->store) != DG_OK)
        return dg_fail(err, err_len, DG_ERR_IO, "the plugin's state store is busy or failing");
    int rc = dg_store_discussion_insert(p->store, d, id);
    if (rc == DG_OK)
        d->id = *id;
    if (rc == DG_OK)
        rc = dg_store_discussion_set_name(p->store, *id, name);
    if (rc == DG_OK && ic) {
        /* The result, with the effect it reports. */
        dg_tool_call_row res = {.channel_id = d->discussion_channel_id, .discussion_id = *id};
        rc = dg_store_tool_call_done(p->store, ic->tool, ic->call_id, ic->fp, &res,
                                     d->created_at_ms);
    }
    if (rc == DG_OK)
        rc = dg_turns_prefill_discussion(p->turns, d->discussion_channel_id, d->initiator_agent_id,
                                         (const char *const *)d->turn_order + 1,
                                         d->n_turn_order - 1, d->created_at_ms);
    if (rc == DG_OK)
        rc = dg_outbox_enqueue(p->store, d->discussion_channel_id, kickoff, mention_ids, n_mentions,
                               d->created_at_ms);
    if (rc != DG_OK)
        dg_log(p, OC_LOG_ERROR, "discussion: recording channel %s failed (%s): %s",
               d->discussion_channel_id, dg_status_name(rc), dg_store_errmsg(p->store));
    rc = dg_store_end(p->store, rc);
    if (rc != DG_OK)
        return dg_fail(err, err_len, rc == DG_ERR_CONFLICT ? DG_ERR_CONFLICT : DG_ERR_IO,
                       "the discussion channel could not be recorded (%s); nothing was kept, "
                       "try again",
                       dg_status_name(rc));
    return DG_OK;
}

/* The plain channel's result, recorded after the REST call (the channel is
 * the whole effect). */
static int record_plain(dg_plugin *p, const discuss_idem *ic, const char *channel_id, char *err,
                        size_t err_len)
{
    if (dg_store_begin(p->store) != DG_OK)
        return dg_fail(err, err_len, DG_ERR_IO, "the plugin's state store is busy or failing");
    dg_tool_call_row res = {.channel_id = (char *)channel_id};
    int rc = dg_store_tool_call_done(p->store, ic->tool, ic->call_id, ic->fp, &res, dg_now_ms(p));
    if (rc != DG_OK)
        dg_log(p, OC_LOG_ERROR,
               "channel %s: recording the result of toolCallId %s failed "
               "(%s): %s",
               channel_id, ic->call_id, dg_status_name(rc), dg_store_errmsg(p->store));
    rc = dg_store_end(p->store, rc);
    if (rc != DG_OK)
        return dg_fail(err, err_len, DG_ERR_IO,
                       "the channel could not be recorded (%s); nothing "
                       "was kept, try again",
                       dg_status_name(rc));
    return DG_OK;
}

/* Record the intent of ic before the REST call, so that a repeat after a
 * crash knows the channel may exist already; a discussion's intent notes
 * its origin, name and initiator (agent id), so that one nobody repeats is
 * found and undone and its initiator told (discuss_unfinished.c). */
static int record_intent(dg_plugin *p, const discuss_idem *ic, const dg_channel_request *req,
                         const char *initiator, char *err, size_t err_len)
{
    if (dg_store_begin(p->store) != DG_OK)
        return dg_fail(err, err_len, DG_ERR_IO, "the plugin's state store is busy or failing");
    int rc = dg_store_tool_call_intent(p->store, ic->tool, ic->call_id, ic->fp, dg_now_ms(p));
    if (rc == DG_OK && req->callback_channel_id)
        rc = dg_store_tool_call_note(p->store, ic->tool, ic->call_id, ic->fp, NULL,
                                     req->callback_channel_id, req->name, initiator);
    rc = dg_store_end(p->store, rc);
    if (rc != DG_OK)
        return dg_fail(err, err_len, rc == DG_ERR_CONFLICT ? DG_ERR_CONFLICT : DG_ERR_IO,
                       "the plugin's state store could not record this call (%s); nothing was "
                       "done, try again",
                       dg_status_name(rc));
    return DG_OK;
}

/* The saga's step "channel made": its id with ic's intent, before the
 * members and the kickoff, so that a creation that dies after it is
 * undone with the right channel. */
static int record_made(dg_plugin *p, const discuss_idem *ic, const char *channel_id, char *err,
                       size_t err_len)
{
    if (dg_store_begin(p->store) != DG_OK)
        return dg_fail(err, err_len, DG_ERR_IO, "the plugin's state store is busy or failing");
    int rc = dg_store_tool_call_note(p->store, ic->tool, ic->call_id, ic->fp, channel_id, NULL,
                                     NULL, NULL);
    rc = dg_store_end(p->store, rc);
    if (rc != DG_OK)
        return dg_fail(err, err_len, DG_ERR_IO,
                       "the plugin's state store could not record channel %s (%s); it was "
                       "removed again, try again",
                       channel_id, dg_status_name(rc));
    return DG_OK;
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
        return DG_OK;
    size_t ml = strlen(ic->marker);
    if (!req->topic) {
        *needle = ic->marker;
        return (*topic = strdup(ic->marker)) ? DG_OK : DG_ERR_NOMEM;
    }
    if (dg_utf8_count(req->topic) + 1 + ml > DG_CHAT_TOPIC_MAX) {
        *needle = req->topic;
        return DG_OK;
    }
    size_t n = strlen(req->topic) + 1 + ml + 1;
    if (!(*topic = malloc(n)))
        return DG_ERR_NOMEM;
    snprintf(*topic, n, "%s\n%s", req->topic, ic->marker);
    *needle = ic->marker;
    return DG_OK;
}

/* The checks before any effect: the request (dg_discuss_validate) and
 * what this plugin needs to create a channel at all. */
static int check_creatable(dg_plugin *p, const dg_caller *caller, const dg_channel_request *req,
                           char *err, size_t err_len)
{
    int rc = dg_discuss_validate(p, caller, req, err, err_len);
    if (rc != DG_OK)
        return rc;
    dg_platform pf = dg_discuss_platform(caller, req);
    if (pf == DG_PLATFORM_SLACK && !p->slack)
        return dg_fail(err, err_len, DG_ERR_UNSUPPORTED,
                       "the Slack moderator app has no token (a `slack` section and env "
                       "DIRIGENT_SLACK_MODERATOR_TOKEN), so no channel can be created; ask the "
                       "operator");
    if (pf == DG_PLATFORM_SLACK)
        return DG_OK; /* Slack makes channels in the token's workspace */
    if (!p->chat)
        return dg_fail(err, err_len, DG_ERR_UNSUPPORTED,
                       "the moderator bot has no token (discord.moderatorToken or env "
                       "DIRIGENT_MODERATOR_TOKEN), so no channel can be created; ask the operator");
    if (!p->cfg.discord_guild_id)
        return dg_fail(err, err_len, DG_ERR_UNSUPPORTED,
                       "discord.guildId is not configured, so no channel can be created; ask "
                       "the operator to set it");
    return DG_OK;
}

/* The channel's members: initiator, participants, allowed users,
 * moderator, each once. *out: malloc'd array of borrowed strings, the
 * caller frees it. The caller and participants are validated agents. */
static int channel_members(const dg_plugin *p, dg_platform pf, const dg_caller *caller,
                           const dg_channel_request *req, const char ***out, size_t *n, char *err,
                           size_t err_len)
{
    size_t cap = 2 + req->n_participants + req->n_allowed_user_ids;
    const char **members = calloc(cap, sizeof *members);
    *out = members;
    *n = 0;
    if (!members)
        return dg_fail(err, err_len, DG_ERR_NOMEM, "out of memory");
    /* Validated: each agent has an id on pf (discuss_validate.c); the
     * section of pf, present for its client, has the moderator's. */
    add_unique(members, n, dg_config_agent_user(dg_config_agent(&p->cfg, caller->agent_id), pf));
    for (size_t i = 0; i < req->n_participants; i++)
        add_unique(members, n,
                   dg_config_agent_user(dg_config_agent(&p->cfg, req->participants[i]), pf));
    for (size_t i = 0; i < req->n_allowed_user_ids; i++)
        add_unique(members, n, req->allowed_user_ids[i]);
    add_unique(members, n, dg_config_moderator_user(&p->cfg, pf));
    return DG_OK;
}

/* The channel an earlier attempt of ic made may lack its members (it died
 * between Slack's conversations.create and conversations.invite): they are
 * invited again before the channel is used. A refusal that will not pass
 * archives (Slack) or deletes (Discord) the channel, so nothing half-made
 * stays; a failure that may pass keeps it for the next attempt, which
 * finds it again. On error *channel_id is freed and NULL. */
static int finish_found(dg_plugin *p, dg_chat *chat, const dg_channel_request *req,
                        const discuss_idem *ic, const dg_chat_room_spec *spec, char **channel_id,
                        char *err, size_t err_len)
{
    dg_chat_err derr;
    memset(&derr, 0, sizeof derr);
    int rc = dg_chat_room_admit(chat, *channel_id, spec, &derr);
    if (rc == DG_OK)
        return DG_OK;
    dg_log(p, OC_LOG_WARN,
           "discord_channel_create '%s' (toolCallId %s): the members of channel %s could not "
           "be invited: %s",
           req->name, ic->call_id, *channel_id, derr.message);
    if (derr.retryable)
        dg_fail(err, err_len, rc,
                "channel '%s' (%s), made by an earlier attempt of this call, still lacks "
                "members and inviting them failed (%s); try again with the same call",
                req->name, *channel_id, derr.message);
    else {
        delete_channel(p, *channel_id);
        dg_fail(err, err_len, rc,
                "channel '%s' (%s), made by an earlier attempt of this call, could not get its "
                "members (%s); it was removed again and no discussion was opened",
                req->name, *channel_id, derr.message);
    }
    free(*channel_id);
    *channel_id = NULL;
    return rc;
}

/* The channel on chat's platform: the one an earlier attempt of this call made
 * (ic recovering: it recorded its intent and never its result, so it may
 * have created the channel before it died), else a new one. *channel_id:
 * malloc'd, the caller frees; NULL on error. */
static int make_channel(dg_plugin *p, dg_chat *chat, const dg_caller *caller,
                        const dg_channel_request *req, const discuss_idem *ic,
                        const dg_chat_room_spec *spec, const char *needle, char **channel_id,
                        char *err, size_t err_len)
{
    const char *pname = dg_platform_title(dg_chat_platform(chat));
    dg_chat_err derr;
    memset(&derr, 0, sizeof derr);
    *channel_id = NULL;
    char id[DG_CHAT_ID_MAX] = "";
    int found = 0, rc = DG_OK;
    if (ic && ic->recovering) {
        rc = dg_chat_room_find(chat, req->name, needle, &found, id, &derr);
        if (rc == DG_OK && found && !(*channel_id = strdup(id)))
            return dg_fail(err, err_len, DG_ERR_NOMEM, "out of memory");
        if (rc != DG_OK) {
            dg_log(p, OC_LOG_WARN,
                   "discord_channel_create '%s' (toolCallId %s): could not "
                   "list the channels: %s",
                   req->name, ic->call_id, derr.message);
            return dg_fail(err, err_len, rc,
                           "could not check whether an earlier attempt of this call already "
                           "created channel '%s' (%s: %s); nothing was created, try again",
                           req->name, pname, derr.message);
        }
        if (*channel_id) {
            dg_log(p, OC_LOG_INFO,
                   "discord_channel_create '%s' (toolCallId %s): channel %s, "
                   "made by an earlier attempt that died before recording it, is used instead "
                   "of a new one",
                   req->name, ic->call_id, *channel_id);
            return finish_found(p, chat, req, ic, spec, channel_id, err, err_len);
        }
    }
    if (!*channel_id && (rc = dg_chat_room_create(chat, spec, id, &derr)) == DG_OK &&
        !(*channel_id = strdup(id))) {
        delete_channel(p, id);
        return dg_fail(err, err_len, DG_ERR_NOMEM, "out of memory");
    }
    if (rc != DG_OK) {
        const char *kind = dg_chat_err_kind_name(derr.kind);
        dg_log(p, OC_LOG_WARN, "discord_channel_create '%s' by %s failed on %s (%s): %s", req->name,
               caller->agent_id, pname, kind, derr.message);
        return dg_fail(err, err_len, rc, "%s refused to create channel '%s' (%s): %s%s", pname,
                       req->name, kind, derr.message,
                       derr.kind == DG_CHAT_ERR_PERMISSION
                           ? "; the moderator lacks a permission to create channels there, ask "
                             "the operator"
                       : derr.retryable ? "; this may pass if you try again later"
                                        : "");
    }
    return DG_OK;
}

/* A plain channel (no callbackChannelId): the channel is the whole effect;
 * with ic its result is recorded. On DG_OK out takes channel_id. */
static int keep_plain(dg_plugin *p, const dg_caller *caller, const dg_channel_request *req,
                      const discuss_idem *ic, char *channel_id, dg_channel_created *out, char *err,
                      size_t err_len)
{
    int rc = ic ? record_plain(p, ic, channel_id, err, err_len) : DG_OK;
    if (rc != DG_OK)
        return rc;
    out->channel_id = channel_id;
    dg_log(p, OC_LOG_INFO, "channel %s '%s' created for %s (plain)", channel_id, req->name,
           caller->agent_id);
    return DG_OK;
}

/* The kickoff message of discussion d in channel_id, and the user ids it
 * mentions (the turn order's). Both malloc'd, the caller frees them (the
 * ids are borrowed from the config); NULLs and DG_ERR_NOMEM on failure. */
static int render_kickoff(dg_plugin *p, const dg_channel_request *req, const dg_discussion *d,
                          const char *channel_id, char **kickoff, const char ***mention_ids)
{
    char *first = d->turn_order[0];
    dg_platform pf = dg_platform_of_channel(channel_id);
    char *pm = discuss_mentions_of(&p->cfg, pf, d->participants, d->n_participants);
    char *im = discuss_mentions_of(&p->cfg, pf, &first, 1);
    char *oref = discuss_channel_ref(d->origin_channel_id);
    char *dref = discuss_channel_ref(channel_id);
    const char **ids = calloc(d->n_turn_order, sizeof *ids);
    char *where = dg_summary_suggested_path(p->cfg.summary_dir, req->name, channel_id);
    char *tpl = summary_template_text(p);
    *kickoff = NULL;
    if (pm && im && oref && dref && ids && where && tpl) {
        for (size_t i = 0; i < d->n_turn_order; i++)
            ids[i] = dg_config_agent_user(dg_config_agent(&p->cfg, d->turn_order[i]), pf);
        dg_tpl_vars v = {
            .discussGuide = d->discuss_guide,
            .initiatorMention = im,
            .participantMentions = pm,
            .discussionChannel = dref,
            .originChannel = oref,
            .status = "active",
            .summaryPath = where,
            .summaryTemplate = tpl,
        };
        *kickoff = dg_templates_render(p->templates, "kickoff.md", &v);
    }
    free(pm);
    free(im);
    free(oref);
    free(dref);
    free(where);
    free(tpl);
    if (!*kickoff) {
        free(ids);
        ids = NULL;
    }
    *mention_ids = ids;
    return *kickoff ? DG_OK : DG_ERR_NOMEM;
}

/* A discussion in the new channel: its record, turns and kickoff in one
 * transaction, then the outbox is kicked. On DG_OK out takes channel_id. */
static int open_discussion(dg_plugin *p, const dg_caller *caller, const dg_channel_request *req,
                           const discuss_idem *ic, char *channel_id, dg_channel_created *out,
                           char *err, size_t err_len)
{
    dg_discussion d;
    char *kickoff = NULL;
    const char **mention_ids = NULL;
    int64_t id = 0;
    int rc = build_discussion(p, caller, req, channel_id, &d);
    if (rc == DG_OK)
        rc = render_kickoff(p, req, &d, channel_id, &kickoff, &mention_ids);
    if (rc == DG_OK)
        rc = record_discussion(p, &d, req->name, kickoff, mention_ids, d.n_turn_order, ic, &id, err,
                               err_len);
    else
        dg_fail(err, err_len, rc, "out of memory preparing the discussion; try again");
    free(kickoff);
    free(mention_ids);
    if (rc == DG_OK) {
        dg_outbox_kick_all(p);
        dg_log(p, OC_LOG_INFO,
               "discussion %lld opened in channel %s by %s (origin %s, %zu "
               "agents)",
               (long long)id, channel_id, caller->agent_id, d.origin_channel_id, d.n_turn_order);
        out->channel_id = channel_id;
        out->is_discussion = 1;
        out->discussion_id = id;
    }
    dg_discussion_clear(&d);
    return rc;
}

/* One creation: checks, members, intent, the channel, then a plain
 * channel's or a discussion's record. A channel made but not recorded is
 * deleted again, so a failed call leaves nothing half-made. */
static int create_channel(dg_plugin *p, const dg_caller *caller, const dg_channel_request *req,
                          discuss_idem *ic, dg_channel_created *out, char *err, size_t err_len)
{
    const char **members = NULL;
    size_t n_members = 0;
    char *topic = NULL, *channel_id = NULL;
    const char *needle = NULL;
    dg_platform pf = dg_discuss_platform(caller, req);
    int rc = check_creatable(p, caller, req, err, err_len);
    if (rc == DG_OK)
        rc = channel_members(p, pf, caller, req, &members, &n_members, err, err_len);
    if (rc == DG_OK && topic_with_marker(req, ic, &topic, &needle) != DG_OK)
        rc = dg_fail(err, err_len, DG_ERR_NOMEM, "out of memory");
    if (rc == DG_OK && ic && !ic->recovering)
        rc = record_intent(p, ic, req, caller->agent_id, err, err_len);
    if (rc == DG_OK) {
        dg_chat_room_spec spec = {
            .name = req->name,
            .topic = topic ? topic : req->topic,
            .parent_id = req->parent_id,
            .member_ids = members,
            .n_members = n_members,
        };
        rc = make_channel(p, dg_plugin_chat(p, pf), caller, req, ic, &spec, needle, &channel_id,
                          err, err_len);
    }
    free(topic);
    free(members);
    if (rc == DG_OK && ic && req->callback_channel_id)
        rc = record_made(p, ic, channel_id, err, err_len);
    if (rc != DG_OK && channel_id) {
        delete_channel(p, channel_id);
        free(channel_id);
    }
    if (rc != DG_OK)
        return rc;
    rc = req->callback_channel_id
             ? open_discussion(p, caller, req, ic, channel_id, out, err, err_len)
             : keep_plain(p, caller, req, ic, channel_id, out, err, err_len);
    if (rc != DG_OK) {
        delete_channel(p, channel_id);
        free(channel_id);
    }
    return rc;
}

int dg_discuss_create_channel(dg_plugin *p, const dg_caller *caller, const dg_channel_request *req,
                              dg_channel_created *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (!caller || !caller->tool_call_id)
        return create_channel(p, caller, req, NULL, out, err, err_len);
    discuss_idem ic;
    discuss_idem_for_create(&ic, caller, req);
    int rc = discuss_inflight_claim(p, &ic);
    if (rc == DG_ERR_CONFLICT)
        return dg_fail(err, err_len, DG_ERR_CONFLICT,
                       "a call with toolCallId %s is still running; wait for its result instead "
                       "of calling again",
                       ic.call_id);
    if (rc != DG_OK)
        return dg_fail(err, err_len, rc, "out of memory");
    dg_tool_call_row row;
    rc = discuss_idem_lookup(p, &ic, &row);
    if (rc != DG_OK) {
        rc = dg_fail(err, err_len, DG_ERR_IO, "the plugin's state store failed (%s); try again",
                     dg_status_name(rc));
    } else if (row.state == DG_TOOL_CALL_DONE) {
        /* Answered before (the host lost the answer): the same result, and
         * nothing done again. */
        if (!row.channel_id) {
            rc = dg_fail(err, err_len, DG_ERR_INTERNAL,
                         "the stored result of toolCallId %s has "
                         "no channel; this is a bug, report it",
                         ic.call_id);
        } else {
            out->channel_id = row.channel_id;
            row.channel_id = NULL;
            out->is_discussion = row.discussion_id != 0;
            out->discussion_id = row.discussion_id;
            dg_log(p, OC_LOG_INFO,
                   "discord_channel_create: toolCallId %s was answered before "
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
