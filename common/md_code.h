/*
 * md_code.h -- where Discord markdown has code: `inline` spans and
 * ``` fenced ``` blocks. Discord pings nobody for a mention written inside
 * code, so the plugin (a human's "<@id>" and "@name"), the reference
 * gateway and the fake Discord skip those parts of a message.
 */
#ifndef DG_MD_CODE_H
#define DG_MD_CODE_H

/*
 * Code is a run of N backticks up to the next run of exactly N backticks
 * (a fenced block is N = 3), both runs included; a run without its closing
 * run is plain text, and so is a backslash-escaped backtick outside code.
 * Every byte of text that is code is overwritten with a space, in place,
 * so offsets stay as they were. Returns 1 when any byte was, else 0
 * (text NULL: 0). No allocation. Any thread.
 */
int dg_md_blank_code(char *text);

#endif
