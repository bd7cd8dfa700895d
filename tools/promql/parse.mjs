// Parses PromQL expressions with the Prometheus project's own grammar (@prometheus-io/lezer-promql, the
// parser of Prometheus' web UI) and prints, per expression, the first syntax error (null when it parses)
// and the metric names its vector selectors name. Input: a JSON array of strings on stdin; output: a JSON
// array of {"error": string | null, "metrics": [string]} on stdout, in the same order.
// Run by the Python tests (oke_gpu_rdma/promql_check.py): `node tools/promql/parse.mjs < exprs.json`.
import { parser } from "@prometheus-io/lezer-promql";

function check(expr) {
  const tree = parser.parse(expr);
  let error = null;
  const metrics = new Set();
  tree.iterate({
    enter(node) {
      if (node.type.isError && error === null) {
        error = `syntax error at offset ${node.from}: ${JSON.stringify(expr.slice(node.from, node.from + 20))}`;
      }
      // VectorSelector > Identifier is the metric name (a selector of labels alone has none).
      if (node.name === "Identifier" && node.node.parent?.name === "VectorSelector") {
        metrics.add(expr.slice(node.from, node.to));
      }
    },
  });
  return { error, metrics: [...metrics].sort() };
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const expressions = JSON.parse(input);
  process.stdout.write(JSON.stringify(expressions.map(check)));
});
