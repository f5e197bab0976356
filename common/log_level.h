/*
 * log_level.h -- the levels of a log line below the host boundary (the
 * Discord client's log sink). Their values are the ABI's (OC_LOG_*), so
 * the plugin hands a line's level to the host unchanged; hooks/entry.c
 * asserts that the two lists agree.
 */
#ifndef DG_LOG_LEVEL_H
#define DG_LOG_LEVEL_H

enum dg_log_level {
    DG_LOG_DEBUG = 0,
    DG_LOG_INFO = 1,
    DG_LOG_WARN = 2,
    DG_LOG_ERROR = 3,
};

#endif
