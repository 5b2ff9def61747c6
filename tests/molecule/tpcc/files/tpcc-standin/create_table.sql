-- Test double for tpcc-mysql's create_table.sql (see README.md): the scenario never runs it.
SELECT 'tpcc-mysql stand-in: no tables';
