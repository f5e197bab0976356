/*
 * ctl_text.c -- stored text made well-formed UTF-8 before it is printed
 * (ctl_text.h).
 */
#include "ctl_text.h"

#include <stdio.h>
#include <stdlib.h>

#include "utf8.h"

void dg_ctl_text_fix(char **s)
{
    if (!*s || dg_utf8_count_valid(*s) >= 0)
        return;
    char *valid = dg_utf8_valid_copy(*s);
    if (!valid)
        return;
    free(*s);
    *s = valid;
}

static void fix_all(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        dg_ctl_text_fix(&v[i]);
}

void dg_ctl_text_fix_view(dg_turn_view *v)
{
    fix_all(v->members, v->n_members);
}

void dg_ctl_text_fix_discussion(dg_discussion_info *i)
{
    dg_discussion *d = &i->d;
    char **text[] = {&d->discussion_channel_id, &d->origin_channel_id,    &d->initiator_agent_id,
                     &d->initiator_session_key, &d->initiator_session_id, &d->initiator_workspace,
                     &d->discuss_guide,         &d->summary_path,         &i->channel_name};
    for (size_t k = 0; k < sizeof text / sizeof *text; k++)
        dg_ctl_text_fix(text[k]);
    if (dg_utf8_count_valid(d->end_status) < 0) {
        char *valid = dg_utf8_valid_copy(d->end_status);
        if (valid)
            snprintf(d->end_status, sizeof d->end_status, "%s", valid);
        free(valid);
    }
    fix_all(d->participants, d->n_participants);
    fix_all(d->turn_order, d->n_turn_order);
    dg_ctl_text_fix_view(&i->turn);
}

void dg_ctl_text_fix_outbox_rows(dg_outbox_row *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        dg_ctl_text_fix(&v[i].channel_id);
        dg_ctl_text_fix(&v[i].content);
        dg_ctl_text_fix(&v[i].last_error);
        dg_ctl_text_fix(&v[i].message_id);
        dg_ctl_text_fix(&v[i].thread_id);
    }
}

void dg_ctl_text_fix_transitions(dg_transition *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        char **text[] = {&v[i].scope,         &v[i].cause, &v[i].speaker_before,
                         &v[i].speaker_after, &v[i].state, &v[i].passed};
        for (size_t k = 0; k < sizeof text / sizeof *text; k++)
            dg_ctl_text_fix(text[k]);
    }
}
