/* Test double for tpcc-mysql's tpcc_load (see ../README.md): upstream's banner, options and usage
 * text, and nothing else. It calls libm and the client library so that its link needs both. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <mysql.h>

int main(int argc, char *argv[])
{
    int c;

    printf("*************************************\n");
    printf("*** TPCC-mysql Data Loader        ***\n");
    printf("*************************************\n");
    while ((c = getopt(argc, argv, "h:P:d:u:p:w:l:m:n:")) != -1) {
        if (c == '?') {
            printf("Usage: tpcc_load -h server_host -P port -d database_name -u mysql_user -p mysql_password -w warehouses -l part -m min_wh -n max_wh\n");
            printf("* [part]: 1=ITEMS 2=WAREHOUSE 3=CUSTOMER 4=ORDERS\n");
            exit(0);
        }
    }
    fprintf(stderr, "tpcc_load stand-in (a test double, client library %s, %.0f): loads nothing\n",
            mysql_get_client_info(), exp((double) argc));
    return 1;
}
