/*
 * The commands of stageloadctl, one line each, in the order --help lists
 * them. CLI_COMMAND(x) names the entry cmd_x_entry, which the command's
 * cmd-*.c defines next to its code; cli-cmd.c includes this file to
 * declare and list them. Adding a command is its entry and one line here.
 */
CLI_COMMAND(info)
CLI_COMMAND(history)
CLI_COMMAND(meter)
CLI_COMMAND(plot)
CLI_COMMAND(top)
CLI_COMMAND(submit)
CLI_COMMAND(run)
CLI_COMMAND(status)
CLI_COMMAND(show)
CLI_COMMAND(cancel)
CLI_COMMAND(hold)
CLI_COMMAND(release)
CLI_COMMAND(resubmit)
CLI_COMMAND(update)
CLI_COMMAND(wait)
CLI_COMMAND(logs)
CLI_COMMAND(events)
CLI_COMMAND(report)
CLI_COMMAND(stage)
CLI_COMMAND(doctor)
