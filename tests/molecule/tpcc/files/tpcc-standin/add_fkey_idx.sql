-- Test double for tpcc-mysql's add_fkey_idx.sql (see README.md): the scenario never runs it.
SELECT 'tpcc-mysql stand-in: no keys';
