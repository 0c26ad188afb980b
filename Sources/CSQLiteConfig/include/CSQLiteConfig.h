#ifndef CSQLITECONFIG_H
#define CSQLITECONFIG_H

#include <sqlite3.h>

/// SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE for `db`: closing the last connection does not copy the WAL
/// into the database file. sqlite3_db_config is variadic, which Swift cannot call.
int sqlite3_db_config_no_checkpoint_on_close(sqlite3 *db);

#endif
