/*
 * snowflake.h -- Discord ids (snowflakes) as decimal text: the one check of
 * their shape and their order, shared by the Discord client, the plugin's
 * configuration and tools, and the reference gateway.
 */
#ifndef DG_SNOWFLAKE_H
#define DG_SNOWFLAKE_H

/* 1 when s is a snowflake: 1..20 digits, no leading zero, at most
 * 2^64-1; 0 otherwise (NULL included). Any thread. */
int dg_snowflake_valid(const char *s);

/* <0, 0 or >0 as a is older than, the same as or newer than b: a shorter
 * id is the smaller number, ids of one length compare by digits. Both
 * non-NULL. Any thread. */
int dg_snowflake_cmp(const char *a, const char *b);

#endif
