declare module 'parse-prometheus-text-format' {
  /** Parses Prometheus text exposition format; throws on text that is not. */
  export default function parse(text: string): unknown[];
}
