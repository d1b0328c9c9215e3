/**
 * How the states of the demo domain's tools are written in Chinese (and `placed` as "not shipped
 * yet"), for the answer checks (reading.ts) and the values a final answer is shown
 * (answer-sheet.ts). Written apart from the bench's own word lists (eval/answer-text.ts), so the
 * bench's checker stays a second opinion. Pure data.
 *
 * A state not in the table is read in its English form only (the value, `_` as a space). Each
 * Chinese form is written so that no form of another state of the same field contains it: 故障
 * ("fault") is left out of `outage` because answers write 故障编号 for an incident's id.
 */

/** Chinese forms of a state value, the one a reply should use first. */
export const CHINESE_STATES: Readonly<Record<string, readonly string[]>> = {
  // orders.get / orders.latest status
  placed: ['已下单'],
  shipped: ['已发货', '已寄出', '已经发货', '已经寄出'],
  delivered: ['已送达', '已签收', '已经送达', '已经签收'],
  // shipping.track state
  pending: ['待处理', '处理中', '等待处理'],
  in_transit: ['运输中', '配送中', '在途中', '正在运输'],
  // expenses.get_claim state
  submitted: ['已提交', '审批中', '待审批', '已经提交'],
  approved: ['已批准', '已经批准', '被批准', '审批通过', '已审批通过'],
  paid: ['已支付', '已付款', '已打款', '已经支付', '已经付款'],
  rejected: ['已拒绝', '被拒绝', '已驳回', '被驳回', '已经拒绝'],
  // status.service state
  operational: ['正常运行', '运行正常'],
  degraded: ['性能下降', '降级', '运行缓慢'],
  outage: ['服务中断', '中断', '宕机', '不可用'],
  // incidents.latest state
  investigating: ['调查中', '正在调查', '排查中'],
  monitoring: ['监控中', '正在监控', '观察中'],
  resolved: ['已解决', '已恢复'],
};

/**
 * Forms that state a state by saying the next has not happened ("has not shipped yet", 未发货): not
 * a negated later state, which the checks let pass.
 */
const NOT_YET: Readonly<Record<string, readonly string[]>> = {
  placed: ['not shipped', 'not yet shipped', 'not been shipped', "hasn't shipped", 'has not shipped', '未发货', '尚未发货', '还没发货', '还未发货', '没有发货'],
};

/** The forms `value` may be written in: itself, with `_` as a space, its Chinese forms and its not-yet forms. */
export function stateForms(value: string): string[] {
  const v = value.toLowerCase();
  return [...new Set([v, v.replace(/_/g, ' '), ...(CHINESE_STATES[v] ?? []), ...(NOT_YET[v] ?? [])])];
}
