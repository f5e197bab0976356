/*
 * summary.h -- conventions around a discussion's summary file: where it
 * is suggested to live (discussion.summaryDir), which headings it must
 * contain (discussion.summaryTemplate), that it is not blank, and the
 * preview the result message carries (discussion.previewChars). No store,
 * no host call: discuss_*.c use these around the file paths.h opened.
 * (Owner: discussion area.)
 */
#ifndef DG_SUMMARY_H
#define DG_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "paths.h"
#include "must_check.h"

/* The headings a summary must contain, read from discussion.summaryTemplate. */
typedef struct dg_summary_rules dg_summary_rules;

/* Longest summaryTemplate file, and most headings, accepted. */
#define DG_SUMMARY_TEMPLATE_MAX_BYTES 8192
#define DG_SUMMARY_MAX_HEADINGS 32

/*
 * Read the template at path (absolute): every line starting with '#' (after
 * blanks) is a required heading, compared without surrounding blanks. On
 * DG_OK *out is owned by the caller (dg_summary_rules_free). A missing,
 * unreadable, oversize file or one without a heading is an init error
 * naming discussion.summaryTemplate, the path and the rule. Init only.
 */
int dg_summary_rules_load(const char *path, dg_summary_rules **out, char *err,
                          size_t err_len) DG_MUST_CHECK;
void dg_summary_rules_free(dg_summary_rules *r);

/* The template's text as the kickoff shows it ({summaryTemplate}); borrowed,
 * NULL for r NULL. Any thread (read-only after load). */
const char *dg_summary_rules_text(const dg_summary_rules *r);

/*
 * Read fd from its start and check every required heading appears as a line
 * of its own. DG_OK (also when r is NULL), DG_ERR_INVALID with a sentence
 * naming every missing heading, or DG_ERR_IO. Any thread.
 */
int dg_summary_check_headings(const dg_summary_rules *r, int fd, const char *path, char *err,
                              size_t err_len) DG_MUST_CHECK;

/*
 * The first `chars` characters (UTF-8 code points) of the file at fd, read
 * from its start, cut on the last line break, else the last space, within
 * them ("..." appended when cut), each line quoted with "> ", and made inert:
 * a zero-width space follows every '@' and every '<' that starts a Discord
 * mention or link, so nothing in it pings or links. A new string the caller
 * frees ("" when chars is 0 or the file is blank); NULL when out of memory
 * or unreadable. Any thread.
 */
char *dg_summary_preview(int fd, long chars) DG_MUST_CHECK;

/* "<dir>/<channel_name>.md" (channel_name NULL: "<dir>/<channel_id>.md").
 * A new string the caller frees; NULL when out of memory. */
char *dg_summary_suggested_path(const char *dir, const char *channel_name,
                                const char *channel_id) DG_MUST_CHECK;

/*
 * Open a summary the way discuss-callback names it: a relative path without
 * a folder ("x.md") is looked up in dir first ("<dir>/x.md"); if it is not
 * there (DG_ERR_NOT_FOUND) the path is opened as given, so every refusal is
 * the one dg_workspace_open gives for the path as written. Same contract as
 * dg_workspace_open otherwise. Any thread.
 */
int dg_summary_open(const char *workspace, const char *dir, const char *path, int64_t max_bytes,
                    dg_workspace_file *out, char *err, size_t err_len) DG_MUST_CHECK;

/* DG_OK when the summary in fd has at least one character that is not
 * white space (a summary of blanks says nothing), else DG_ERR_INVALID with
 * a sentence naming path, or DG_ERR_IO. Reads fd from its current offset
 * (an opened file: its start) to its end. Any thread. */
int dg_summary_check_text(int fd, const char *path, char *err, size_t err_len) DG_MUST_CHECK;

#endif
