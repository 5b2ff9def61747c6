/* Test double for tpcc-mysql's tpcc_start (see ../README.md): upstream's banner, options and usage
 * text, and nothing else. It calls libm and the client library so that its link needs both. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <mysql.h>

int main(int argc, char *argv[])
{
    int c;

    printf("***************************************\n");
    printf("*** ###easy### TPC-C Load Generator ***\n");
    printf("***************************************\n");
    while ((c = getopt(argc, argv, "h:P:d:u:p:w:c:r:l:i:f:t:m:o:S:0:1:2:3:4:")) != -1) {
        if (c == '?') {
            printf("Usage: tpcc_start -h server_host -P port -d database_name -u mysql_user -p mysql_password -w warehouses -c connections -r warmup_time -l running_time -i report_interval -f report_file -t trx_file\n");
            exit(0);
        }
    }
    fprintf(stderr, "tpcc_start stand-in (a test double, client library %s, %.0f): runs nothing\n",
            mysql_get_client_info(), exp((double) argc));
    return 1;
}
