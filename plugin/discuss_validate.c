/*
 * discuss_validate.c -- the checks of a channel request (discord_channel_create)
 * before anything is done: the caller, the name and members, and in
 * discussion mode the guide, the initiator's session and workspace, and
 * that discussions do not nest. Bad input changes nothing.
 */
#include "discuss_int.h"
#include "snowflake.h"

static int is_blank(const char *s)
{
    for (; s && *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
            return 0;
    return 1;
}

/* Discussion status of a channel in a short read transaction. */
static int channel_status(dg_plugin *p, const char *channel_id, dg_discussion_status *s)
{
    *s = DG_DISCUSSION_NONE;
    if (!channel_id)
        return DG_OK;
    if (dg_store_begin(p->store) != DG_OK)
        return DG_ERR_IO;
    int rc = dg_store_discussion_probe(p->store, channel_id, NULL, s);
    return dg_store_end(p->store, rc);
}

dg_platform dg_discuss_platform(const dg_caller *caller, const dg_channel_request *req)
{
    dg_platform pf = dg_platform_of_channel(req->callback_channel_id);
    if (!pf && caller)
        pf = dg_platform_of_channel(caller->channel_id);
    return pf ? pf : DG_PLATFORM_DISCORD;
}

/* "Discord", "Slack": the platform as a sentence names it. */
static const char *platform_title(dg_platform pf)
{
    return pf == DG_PLATFORM_SLACK ? "Slack" : "Discord";
}

/* The caller, the name, the topic and the category: what every channel
 * request on platform pf needs. */
static int check_channel(const dg_config *cfg, dg_platform pf, const dg_caller *caller,
                         const dg_channel_request *req, char *err, size_t err_len)
{
    char why[256];
    const char *key = pf == DG_PLATFORM_SLACK ? "slackUserId" : "discordUserId";
    if (!caller || !caller->agent_id || !*caller->agent_id)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "the tool context has no agentId; the host must say which agent calls "
                       "discord_channel_create");
    if (!dg_config_agent_user(dg_config_agent(cfg, caller->agent_id), pf))
        return dg_fail(err, err_len, DG_ERR_DENIED,
                       "agent '%s' has no %s user id in the plugin config `agents`, so it "
                       "cannot be a member of the channel; add agents.%s.%s to the dirigent "
                       "config",
                       caller->agent_id, platform_title(pf), caller->agent_id, key);
    if (!req->name || !*req->name)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "name is required: the channel name (lower case, no spaces, 1-100 "
                       "characters), e.g. \"design-review\"");
    if (dg_platform_check_room_name(pf, req->name, why, sizeof why) != DG_OK)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "name '%.100s' is not a valid %s channel name: %s; use lower "
                       "case letters, digits and dashes, e.g. \"design-review\"",
                       req->name, platform_title(pf), why);
    if (req->topic && dg_utf8_count(req->topic) > DG_CHAT_TOPIC_MAX)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "topic has %zu characters; at most %d are allowed: shorten it",
                       dg_utf8_count(req->topic), DG_CHAT_TOPIC_MAX);
    if (req->parent_id && pf == DG_PLATFORM_SLACK)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "parentId is a Discord category; Slack channels have none: leave "
                       "parentId out");
    if (req->parent_id && !dg_snowflake_valid(req->parent_id))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "parentId '%.100s' is not a Discord snowflake (1-20 digits); pass the "
                       "category's id or leave parentId out",
                       req->parent_id);
    return DG_OK;
}

/* participants and allowedUserIds: known on pf, not the caller, each once. */
static int check_members(const dg_config *cfg, dg_platform pf, const dg_caller *caller,
                         const dg_channel_request *req, char *err, size_t err_len)
{
    /* A repeated or self-naming entry is a mistake of the caller (it may
     * have meant another agent): refused, not silently dropped. */
    for (size_t i = 0; i < req->n_participants; i++) {
        const char *a = req->participants[i];
        if (!a || !dg_config_agent(cfg, a))
            return dg_fail(
                err, err_len, DG_ERR_INVALID,
                "participants[%zu] '%.100s' is not a known agent; participants are agent "
                "ids from the plugin config `agents` (humans go in allowedUserIds)",
                i, a ? a : "");
        if (strcmp(a, caller->agent_id) == 0)
            return dg_fail(err, err_len, DG_ERR_INVALID,
                           "participants[%zu] '%s' is you, the caller: you are a member of the "
                           "channel anyway; list only agents other than you",
                           i, a);
        if (!dg_config_agent_user(dg_config_agent(cfg, a), pf))
            return dg_fail(err, err_len, DG_ERR_INVALID,
                           "participants[%zu] '%s' has no %s user id in the plugin config, so "
                           "it cannot join a %s channel; add agents.%s.%s or leave it out",
                           i, a, platform_title(pf), platform_title(pf), a,
                           pf == DG_PLATFORM_SLACK ? "slackUserId" : "discordUserId");
        for (size_t j = 0; j < i; j++)
            if (strcmp(req->participants[j], a) == 0)
                return dg_fail(err, err_len, DG_ERR_INVALID,
                               "participants[%zu] '%s' repeats participants[%zu]; name each agent "
                               "once",
                               i, a, j);
    }
    for (size_t i = 0; i < req->n_allowed_user_ids; i++) {
        const char *u = req->allowed_user_ids[i];
        if (!u || !dg_platform_user_id_valid(pf, u))
            return dg_fail(err, err_len, DG_ERR_INVALID,
                           "allowedUserIds[%zu] '%.100s' is not a %s user id (%s)", i, u ? u : "",
                           platform_title(pf),
                           pf == DG_PLATFORM_SLACK ? "U or W and 2-20 letters or digits"
                                                   : "a snowflake of 1-20 digits");
        for (size_t j = 0; j < i; j++)
            if (strcmp(req->allowed_user_ids[j], u) == 0)
                return dg_fail(err, err_len, DG_ERR_INVALID,
                               "allowedUserIds[%zu] '%s' repeats allowedUserIds[%zu]; name each "
                               "user once",
                               i, u, j);
    }
    return DG_OK;
}

/* Discussion mode (callbackChannelId given): the origin, the guide, the
 * participants, and the initiator's session and workspace. */
static int check_discussion(const dg_config *cfg, const dg_caller *caller,
                            const dg_channel_request *req, char *err, size_t err_len)
{
    if (!dg_platform_of_channel(req->callback_channel_id))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "callbackChannelId '%.100s' is not a Discord channel id (a snowflake of "
                       "1-20 digits) or a Slack one (C or G and 2-20 letters or digits); pass "
                       "the id of the channel you are working in",
                       req->callback_channel_id);
    if (!req->discuss_guide || is_blank(req->discuss_guide))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "discussGuide is required with callbackChannelId: say what to discuss, "
                       "what conclusion is wanted and its limits");
    size_t gl = dg_utf8_count(req->discuss_guide);
    if (gl > (size_t)cfg->max_guide_chars)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "discussGuide has %zu characters, over discussion.maxGuideChars (%ld); "
                       "shorten it",
                       gl, cfg->max_guide_chars);
    if (req->n_participants == 0)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "participants must name at least one agent other than you for a "
                       "discussion");
    if (!caller->session_key || !*caller->session_key)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "the tool context has no sessionKey; a discussion records the "
                       "initiator's session");
    if (!caller->workspace_dir || caller->workspace_dir[0] != '/')
        return dg_fail(err, err_len, DG_ERR_INVALID,
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
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "the tool context's workspaceDir %.200s is not an existing folder (%s); a "
                       "discussion needs the initiator's workspace for its summary file, ask the "
                       "operator to create it",
                       caller->workspace_dir, why_not);
    return DG_OK;
}

/* Discussions do not nest: neither the caller's channel nor the origin is
 * a discussion channel. */
static int check_not_nested(dg_plugin *p, const dg_caller *caller, const dg_channel_request *req,
                            char *err, size_t err_len)
{
    dg_discussion_status here, there;
    if (channel_status(p, caller->channel_id, &here) != DG_OK ||
        channel_status(p, req->callback_channel_id, &there) != DG_OK)
        return dg_fail(err, err_len, DG_ERR_IO, "the plugin's state store failed; try again");
    if (here != DG_DISCUSSION_NONE)
        return dg_fail(err, err_len, DG_ERR_DENIED,
                       "you are inside discussion channel %s: discussions do not nest; finish "
                       "this one (the initiator calls discuss-callback) and open the new one "
                       "from your work channel",
                       caller->channel_id);
    if (there != DG_DISCUSSION_NONE)
        return dg_fail(err, err_len, DG_ERR_DENIED,
                       "callbackChannelId %s is itself a discussion channel: discussions do not "
                       "nest; pass your work channel instead",
                       req->callback_channel_id);
    return DG_OK;
}

int dg_discuss_validate(dg_plugin *p, const dg_caller *caller, const dg_channel_request *req,
                        char *err, size_t err_len)
{
    dg_platform pf = dg_discuss_platform(caller, req);
    int rc = check_channel(&p->cfg, pf, caller, req, err, err_len);
    if (rc == DG_OK)
        rc = check_members(&p->cfg, pf, caller, req, err, err_len);
    if (rc != DG_OK)
        return rc;
    if (!req->callback_channel_id) {
        if (req->discuss_guide)
            return dg_fail(err, err_len, DG_ERR_INVALID,
                           "discussGuide is only accepted together with callbackChannelId (the "
                           "channel to report the result to); add callbackChannelId for a "
                           "discussion, or drop discussGuide for a plain channel");
        return DG_OK;
    }
    rc = check_discussion(&p->cfg, caller, req, err, err_len);
    if (rc == DG_OK)
        rc = check_not_nested(p, caller, req, err, err_len);
    return rc;
}
