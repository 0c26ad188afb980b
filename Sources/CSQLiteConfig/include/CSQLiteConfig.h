#ifndef CSQLITECONFIG_H
#define CSQLITECONFIG_H

#include <sqlite3.h>

/// SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE for `db`: closing the last connection does not copy the WAL
/// into the database file. sqlite3_db_config is variadic, which Swift cannot call.
int sqlite3_db_config_no_checkpoint_on_close(sqlite3 *db);

/// SQLITE_CONFIG_MEMSTATUS off: SQLite stops keeping allocation statistics, which it updates
/// under one process-wide mutex on every allocation and free of every connection (the two
/// benchmark nodes and their checkpointers contended on it). Only before SQLite initialises:
/// SQLITE_MISUSE after, and the statistics stay on, which costs speed, not correctness.
/// sqlite3_config is variadic too.
int sqlite3_config_memstatus_off(void);

#endif
