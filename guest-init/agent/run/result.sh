# kiln run: the bash helper (docs/agent-protocol.md, "run"). kiln-init
# writes this file to /run/kiln-run/result.sh and runs
#   bash -c '. /run/kiln-run/result.sh && . "$0"' CODE_FILE
# (sh where the image has no bash: busybox ash runs this too) with
# KILN_RESULT_FILE naming the file the host reads back after the exit.
#   result set JSON      record JSON text (checked by the host) as the value
#   result error MESSAGE record MESSAGE as the run's error (type ResultError)
__kiln_value= __kiln_error=
__kiln_json_string() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\r'/\\r}
  s=${s//$'\t'/\\t}
  printf '"%s"' "${s//[$'\001'-$'\037']/}"
}
__kiln_flush() {
  local body=
  [ -n "$__kiln_value" ] && body="\"value\":$__kiln_value"
  [ -n "$__kiln_error" ] && body="${body:+$body,}\"error\":$__kiln_error"
  printf '{%s}' "$body" >"${KILN_RESULT_FILE:?result: KILN_RESULT_FILE is not set}"
}
result() {
  case "${1-} $#" in
  "set 2")
    __kiln_value=$2
    [ -n "$__kiln_value" ] || __kiln_value=null
    __kiln_flush ;;
  "error 2")
    __kiln_error="{\"type\":\"ResultError\",\"message\":$(__kiln_json_string "$2"),\"traceback\":null}"
    __kiln_flush ;;
  *)
    echo "usage: result set JSON | result error MESSAGE" >&2
    return 2 ;;
  esac
}
