/*
 * snowflake.h -- the order of Discord ids (snowflakes) as decimal text,
 * shared by the plugin (the latest message a channel received,
 * plugin/turns_ingest.c) and the reference gateway (host/ocgw.c).
 */
#ifndef DG_SNOWFLAKE_H
#define DG_SNOWFLAKE_H

/* <0, 0 or >0 as a is older than, the same as or newer than b: a shorter
 * id is the smaller number, ids of one length compare by digits. Both
 * non-NULL. Any thread. */
int dg_snowflake_cmp(const char *a, const char *b);

#endif
