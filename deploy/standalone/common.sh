# Shared by the deploy/standalone scripts (sourced, not run).
#
# Environment (all optional):
#   FLINK_CONF_DIR   configuration directory              (default: deploy/conf)
#   FLINK_RUN_DIR    pid files, logs, per-process tmp dirs (default: deploy/standalone/target/run)
#   FLINK_CLASSPATH_FILE  a file holding the cluster classpath; when unset it is resolved once with Maven from
#                    deploy/standalone/pom.xml into deploy/standalone/target/cluster.classpath
#   MAVEN_ARGS       extra arguments for that Maven call, e.g. -o
#   JAVA             java executable (default: $JAVA_HOME/bin/java, else java)

STANDALONE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$STANDALONE_DIR/../.." && pwd)"
FLINK_CONF_DIR="${FLINK_CONF_DIR:-$REPO_ROOT/deploy/conf}"
FLINK_RUN_DIR="${FLINK_RUN_DIR:-$STANDALONE_DIR/target/run}"
if [ -n "${JAVA_HOME:-}" ] && [ -z "${JAVA:-}" ]; then JAVA="$JAVA_HOME/bin/java"; fi
JAVA="${JAVA:-java}"

JOBMANAGER_MAIN=org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint
TASKMANAGER_MAIN=org.apache.flink.runtime.taskexecutor.TaskManagerRunner

die() { echo "$(basename "$0"): $*" >&2; exit 1; }

# Writes the classpath into an argument file for java (@file) and prints its path. A classpath file keeps the
# command line short (ps stays readable) and is resolved once.
cluster_classpath_args() {
    local cp_file="${FLINK_CLASSPATH_FILE:-$STANDALONE_DIR/target/cluster.classpath}"
    if [ -z "${FLINK_CLASSPATH_FILE:-}" ] && { [ ! -s "$cp_file" ] || [ "$STANDALONE_DIR/pom.xml" -nt "$cp_file" ]; }; then
        mkdir -p "$(dirname "$cp_file")"
        echo "Resolving the cluster classpath with Maven (once) ..." >&2
        (cd "$REPO_ROOT" && mvn -B -q ${MAVEN_ARGS:-} -f deploy/standalone/pom.xml \
            org.apache.maven.plugins:maven-dependency-plugin:2.8:build-classpath \
            -Dmdep.outputFile="$cp_file") >&2 || die "could not resolve the classpath (see above)"
    fi
    [ -s "$cp_file" ] || die "no classpath in $cp_file"
    mkdir -p "$FLINK_RUN_DIR"
    local args="$FLINK_RUN_DIR/classpath.args"
    # written to a temp file and renamed: several start scripts may run at once, and a JVM may be reading it
    local tmp; tmp="$(mktemp "$FLINK_RUN_DIR/.classpath.args.XXXXXX")"
    printf -- '-cp "%s"\n' "$(cat "$cp_file")" > "$tmp"
    mv -f "$tmp" "$args"
    echo "$args"
}

# env.java.opts.all from config.yaml (one line, flat key).
config_java_opts() {
    sed -n 's/^env\.java\.opts\.all:[[:space:]]*//p' "$FLINK_CONF_DIR/config.yaml" | tail -1
}

# Runs Flink's BashJavaUtils (what bin/taskmanager.sh does) to turn the memory configuration into JVM flags and
# dynamic properties. $1: GET_JM_RESOURCE_PARAMS or GET_TM_RESOURCE_PARAMS; the rest: -D key=value overrides.
# Sets RESOURCE_JVM_ARGS and RESOURCE_DYNAMIC_PROPERTIES.
resource_params() {
    local command="$1"; shift
    local cp_args; cp_args="$(cluster_classpath_args)" || exit 1
    local out
    out="$("$JAVA" -Xmx128m @"$cp_args" org.apache.flink.runtime.util.bash.BashJavaUtils "$command" \
        --configDir "$FLINK_CONF_DIR" "$@" 2>&1)" || die "BashJavaUtils failed: $out"
    local results; results="$(printf '%s\n' "$out" | sed -n 's/^BASH_JAVA_UTILS_EXEC_RESULT://p')"
    RESOURCE_JVM_ARGS="$(printf '%s\n' "$results" | sed -n 1p)"
    RESOURCE_DYNAMIC_PROPERTIES="$(printf '%s\n' "$results" | sed -n 2p)"
    [ -n "$RESOURCE_JVM_ARGS" ] || die "BashJavaUtils gave no JVM parameters: $out"
}

# Starts one JVM in the background, records its pid in $FLINK_RUN_DIR/<name>.pid.
# $1: name (jobmanager, taskmanager-1, ...), $2: main class, $3: JVM args (word-split), rest: program args.
start_process() {
    local name="$1" main="$2" jvm_args="$3"; shift 3
    local pid_file="$FLINK_RUN_DIR/$name.pid"
    if [ -f "$pid_file" ] && is_ours "$(cat "$pid_file")" "$main"; then
        die "$name is already running (pid $(cat "$pid_file"))"
    fi
    local cp_args; cp_args="$(cluster_classpath_args)" || exit 1
    mkdir -p "$FLINK_RUN_DIR/log" "$FLINK_RUN_DIR/tmp/$name"
    # java.io.tmpdir per process: ONNX Runtime unpacks its native libraries there (and a killed JVM leaves them).
    # shellcheck disable=SC2086
    (cd "$REPO_ROOT" && exec nohup "$JAVA" $jvm_args $(config_java_opts) ${FLINK_JVM_OPTS:-} \
        -Dflink.standalone.run.dir="$FLINK_RUN_DIR" \
        -Djava.io.tmpdir="$FLINK_RUN_DIR/tmp/$name" \
        -Dlog.file="$FLINK_RUN_DIR/log/$name.log" \
        -Dlog4j.configurationFile="file:$FLINK_CONF_DIR/log4j.properties" \
        @"$cp_args" "$main" --configDir "$FLINK_CONF_DIR" "$@" \
        > "$FLINK_RUN_DIR/log/$name.out" 2>&1 < /dev/null) &
    echo $! > "$pid_file"
    echo "Started $name (pid $!), log $FLINK_RUN_DIR/log/$name.log"
}

# True if $1 is a live process started by these scripts for this run dir running main class $2.
is_ours() {
    local pid="$1" main="$2"
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
    local cmd; cmd="$(tr '\0' ' ' < "/proc/$pid/cmdline")"
    [[ "$cmd" == *"-Dflink.standalone.run.dir=$FLINK_RUN_DIR "* && "$cmd" == *"$main"* ]]
}

# Turns "-Dkey=value" and "-D key=value" arguments into "-D key=value" pairs in the array DYNAMIC.
parse_dynamic() {
    DYNAMIC=()
    while [ $# -gt 0 ]; do
        case "$1" in
            -D) DYNAMIC+=(-D "$2"); shift 2 ;;
            -D*) DYNAMIC+=(-D "${1#-D}"); shift ;;
            *) die "unknown argument '$1' (Flink options go as -Dkey=value)" ;;
        esac
    done
}
