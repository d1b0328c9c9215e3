/** Usage texts of `tao tail` and `tao status`, kept apart so `tao --help` loads no Kafka client. */
export const TAIL_USAGE = 'usage: tao tail [--thought <thought_id or prefix>] [--summary-s 5]';
export const STATUS_USAGE = 'usage: tao status [--json] [--timeout-s 15]   (stage /health endpoints from TAO_STATUS_ENDPOINTS)';
