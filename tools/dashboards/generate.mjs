// Generates assessd's Grafana dashboards as JSON into the directory given
// as the first argument (deploy/grafana/dashboards). Run by `make generate`;
// the output is committed and `make check-generated` fails when it is stale.
//
// Every query selects on the job names of deploy/prometheus/prometheus.yml
// (assessd-serve, assessd-worker) and the metrics documented in
// docs/operations.md. The smoke test (deploy/smoke) runs every panel and
// variable query against a real Prometheus.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  DashboardBuilder, DatasourceVariableBuilder, QueryVariableBuilder, RowBuilder, VariableRefresh, VariableSort,
} from '@grafana/grafana-foundation-sdk/dashboard';
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus';
import { PanelBuilder as TimeseriesPanel } from '@grafana/grafana-foundation-sdk/timeseries';
import { PanelBuilder as TablePanel } from '@grafana/grafana-foundation-sdk/table';

const datasource = { type: 'prometheus', uid: '${datasource}' };
const rate = '$__rate_interval';

function datasourceVariable() {
  return new DatasourceVariableBuilder('datasource').label('Data source').type('prometheus');
}

// labelVariable is a multi-value variable over the values of label on
// metric, "All" matching everything.
function labelVariable(name, label, metric, title) {
  return new QueryVariableBuilder(name)
    .label(title)
    .datasource(datasource)
    .query({ query: `label_values(${metric}, ${label})`, refId: name })
    .definition(`label_values(${metric}, ${label})`)
    .refresh(VariableRefresh.OnTimeRangeChanged)
    .sort(VariableSort.AlphabeticalAsc)
    .multi(true)
    .includeAll(true)
    .allValue('.*');
}

function query(expr, legend) {
  return new DataqueryBuilder().expr(expr).legendFormat(legend).refId('A');
}

// graph is a time series panel of one query.
function graph(title, description, unit, expr, legend) {
  return new TimeseriesPanel()
    .title(title)
    .description(description)
    .datasource(datasource)
    .unit(unit)
    .min(0)
    .height(8)
    .span(12)
    .withTarget(query(expr, legend));
}

// quantile is a graph of the q-quantile of histogram by the labels by.
function quantile(title, description, histogram, selector, by, legend, q = 0.95) {
  return graph(title, description, 's',
    `histogram_quantile(${q}, sum by (le, ${by}) (rate(${histogram}_bucket${selector}[${rate}])))`, legend);
}

// ratio is a graph of errors over total by the labels by: 0 when nothing
// failed, no data only when there was no traffic at all.
function ratio(title, description, errors, total, by) {
  return graph(title, description, 'percentunit',
    `(sum by (${by}) (rate(${errors}[${rate}])) or (0 * sum by (${by}) (rate(${total}[${rate}]))))` +
    ` / sum by (${by}) (rate(${total}[${rate}]))`, by.split(', ').map((l) => `{{${l}}}`).join(' '));
}

function dashboard(uid, title, description) {
  return new DashboardBuilder(title)
    .uid(uid)
    .description(description)
    .tags(['assessd'])
    .refresh('30s')
    .time({ from: 'now-6h', to: 'now' })
    .timezone('utc')
    .readonly()
    .withVariable(datasourceVariable());
}

const serve = 'job="assessd-serve"';
const tenant = `${serve}, org=~"$org"`;
// inRegion keeps organizations of the selected AI regions.
const inRegion = 'and on (org) group by (org) (assessd_org_info{ai_region=~"$region"})';

const overview = dashboard('assessd-overview', 'assessd / Overview',
  'API traffic, errors and latency by route, with a per-tenant drill-down (org and region variables). Counters follow the org variable; latency, authentication failures and the platform\'s gauges carry no org label and show every organization.')
  .withVariable(labelVariable('org', 'org', 'assessd_org_info', 'Organization'))
  .withVariable(labelVariable('region', 'ai_region', 'assessd_org_info', 'AI region'))
  .withRow(new RowBuilder('Traffic'))
  .withPanel(graph('Requests by route', 'Requests per second by route template, of the selected organizations.', 'reqps',
    `sum by (route) (rate(assessd_http_requests_total{${tenant}}[${rate}]))`, '{{route}}'))
  .withPanel(graph('Requests by status class', 'Requests per second by status class, of the selected organizations.', 'reqps',
    `sum by (status) (rate(assessd_http_requests_total{${tenant}}[${rate}]))`, '{{status}}'))
  .withPanel(ratio('5xx ratio', 'Share of requests answered with 5xx, of the selected organizations (alert AssessdHighErrorRate at 2% of all).',
    `assessd_http_requests_total{${tenant}, status="5xx"}`, `assessd_http_requests_total{${tenant}}`, 'job'))
  .withPanel(ratio('Error ratio by route', 'Share of 4xx and 5xx answers by route, of the selected organizations.',
    `assessd_http_requests_total{${tenant}, status=~"4xx|5xx"}`, `assessd_http_requests_total{${tenant}}`, 'route'))
  .withRow(new RowBuilder('Latency'))
  .withPanel(quantile('p95 latency by route', 'p95 request latency by route template.',
    'assessd_http_request_duration_seconds', `{${serve}}`, 'route', '{{route}}'))
  .withPanel(quantile('p99 latency by route', 'p99 request latency (alert AssessdSlowRequests at 500 ms).',
    'assessd_http_request_duration_seconds', `{${serve}}`, 'route', '{{route}}', 0.99))
  .withRow(new RowBuilder('Tenants'))
  .withPanel(graph('Requests by organization', 'Requests per second of the selected organizations, named.', 'reqps',
    `sum by (org, name) (rate(assessd_http_requests_total{${tenant}}[${rate}]) * on (org) group_left (name) ` +
    `group by (org, name) (assessd_org_info{org=~"$org", ai_region=~"$region"}))`, '{{name}} ({{org}})'))
  .withPanel(ratio('Error ratio by organization', 'Share of 4xx and 5xx answers of the selected organizations (alert AssessdTenantErrorSpike).',
    `assessd_http_requests_total{${tenant}, status=~"4xx|5xx"}`, `assessd_http_requests_total{${tenant}}`, 'org'))
  .withPanel(new TablePanel()
    .title('Organizations')
    .description('The selected organizations: name, plan and AI region.')
    .datasource(datasource)
    .height(8)
    .span(12)
    .withTarget(query('group by (org, name, plan, ai_region) (assessd_org_info{org=~"$org", ai_region=~"$region"})', '').instant()))
  .withPanel(graph('Requests by organization and route', 'Requests per second of the selected organizations by route.', 'reqps',
    `sum by (org, route) (rate(assessd_http_requests_total{${tenant}}[${rate}]) ${inRegion})`, '{{org}} {{route}}'))
  .withRow(new RowBuilder('Test delivery'))
  .withPanel(graph('Attempts started', 'Attempts of assignments started per second, of the selected organizations (decision 0192).', 'ops',
    `sum by (org) (rate(assessd_attempts_started_total{${tenant}}[${rate}]))`, '{{org}}'))
  .withPanel(graph('Attempt saves', 'Saves of attempt responses per second by outcome, of the selected organizations: saved (committed), closed (after deadline + grace or once submitted), refused (bad input, a stale expectedRevision), notfound.', 'ops',
    `sum by (outcome) (rate(assessd_attempt_saves_total{${tenant}}[${rate}]))`, '{{outcome}}'))
  .withPanel(quantile('Save latency p99', 'Time to commit a save of an attempt response, p99, by instance.',
    'assessd_attempt_save_duration_seconds', `{${serve}}`, 'instance', '{{instance}}', 0.99))
  .withPanel(graph('Attempts finished', 'Attempts submitted or discarded per second, of the selected organizations, by status and by whom: student, staff, or system when the deadline closed them (the deadline workflow on the workers).', 'ops',
    `sum by (status, by) (rate(assessd_attempts_finished_total{job=~"assessd-serve|assessd-worker", org=~"$org"}[${rate}]))`, '{{status}} by {{by}}'))
  .withRow(new RowBuilder('LTI'))
  .withPanel(graph('LTI launches', 'LTI launches per second of the selected organizations by message type and outcome: ok, or the reason of the refusal (decision 0201).', 'ops',
    `sum by (message, outcome) (rate(assessd_lti_launches_total{${tenant}}[${rate}]))`, '{{message}} {{outcome}}'))
  .withPanel(graph('LTI logins', 'LTI login initiations per second by outcome: ok, or the reason of the refusal; org none when no registration matched (decision 0201).', 'ops',
    `sum by (outcome) (rate(assessd_lti_logins_total{job="assessd-serve", org=~"$org|none"}[${rate}]))`, '{{outcome}}'))
  .withRow(new RowBuilder('Platform'))
  .withPanel(graph('Idempotency keys', 'Requests of the selected organizations sent with an Idempotency-Key by outcome: run (the key was new), replayed (a client resent a request that had answered), in_use (resent while it ran), reused (the key named another request), unanswered (the first request wrote, then its process died before it answered), invalid. Decisions 0178, 0179.', 'reqps',
    `sum by (outcome) (rate(assessd_idempotency_keys_total{${tenant}}[${rate}]))`, '{{outcome}}'))
  .withPanel(graph('Failed authentications', 'Rejected credentials by reason (alert AssessdCredentialGuessing).', 'reqps',
    `sum by (reason) (rate(assessd_auth_failures_total{${serve}}[${rate}]))`, '{{reason}}'))
  .withPanel(graph('Database pool', 'Connections in use and the pool size, by instance.', 'short',
    `sum by (instance) (assessd_db_pool_acquired_connections{${serve}})`, '{{instance}} in use'))
  .withPanel(graph('Dependencies reached', 'By instance, 1 while Redis answers (alert AssessdRedisDown: embedded flows stop without it) and while the credential change listener is connected (alert AssessdCredentialListenerDown).', 'short',
    `max by (instance) (assessd_redis_up{${serve}})`, '{{instance}} Redis')
    .withTarget(query(`max by (instance) (assessd_credential_listener_up{${serve}})`, '{{instance}} credential listener').refId('B')));

const worker = 'job="assessd-worker", region=~"$region"';
// workerTenant keeps the selected organizations of the counters that carry
// org; histograms, Temporal's and the AI provider's metrics do not.
const workerTenant = `${worker}, org=~"$org"`;
const grading = dashboard('assessd-grading', 'assessd / Grading by region',
  'Grading throughput, failures and latency by AI region, the Temporal queues behind them, AI provider calls, grading files, answer-sheet scans, exam generation and regeneration. The org variable filters the counters (results, files, scans, pages, generations, regenerations, webhook deliveries, LTI score posts); latency histograms and Temporal\'s and the AI provider\'s metrics carry no org label and show every organization.')
  .withVariable(labelVariable('region', 'region', 'up{job="assessd-worker"}', 'Region'))
  .withVariable(labelVariable('org', 'org', 'assessd_org_info{job="assessd-worker"}', 'Organization'))
  .withRow(new RowBuilder('Results'))
  .withPanel(graph('Results finished', 'Results finished per second by region and outcome, of the selected organizations.', 'ops',
    `sum by (region, outcome) (rate(assessd_grading_results_total{${workerTenant}}[${rate}]))`, '{{region}} {{outcome}}'))
  .withPanel(ratio('Failed results', 'Share of results of the selected organizations that failed grading (alert AssessdGradingFailures at 10% of a region\'s).',
    `assessd_grading_results_total{${workerTenant}, outcome="failed"}`, `assessd_grading_results_total{${workerTenant}}`, 'region'))
  .withPanel(graph('Results finished by organization', 'Results finished per second by organization and outcome, named.', 'ops',
    `sum by (org, name, outcome) (rate(assessd_grading_results_total{${workerTenant}}[${rate}]) * on (org) group_left (name) ` +
    `group by (org, name) (assessd_org_info{job="assessd-worker", org=~"$org"}))`, '{{name}} ({{org}}) {{outcome}}'))
  .withPanel(ratio('Failed results by organization', 'Share of results that failed grading, by organization.',
    `assessd_grading_results_total{${workerTenant}, outcome="failed"}`, `assessd_grading_results_total{${workerTenant}}`, 'org'))
  .withPanel(quantile('Grading time p50', 'Submission to graded result, median, by region.',
    'assessd_grading_duration_seconds', `{${worker}}`, 'region', '{{region}}', 0.5))
  .withPanel(quantile('Grading time p95', 'Submission to graded result, p95, by region (alert AssessdGradingSlow at 5 minutes).',
    'assessd_grading_duration_seconds', `{${worker}}`, 'region', '{{region}}'))
  .withRow(new RowBuilder('Temporal'))
  .withPanel(quantile('Activity schedule-to-start p95', 'How long polled activity tasks wait for a worker, by task queue: the backlog (alert AssessdTemporalBacklog at 60 s). Activities that start eagerly on the worker that scheduled them wait for none and record nothing, so an idle panel is healthy.',
    'temporal_activity_schedule_to_start_latency_seconds', `{${worker}}`, 'task_queue', '{{task_queue}}'))
  .withPanel(quantile('Workflow task schedule-to-start p95', 'How long workflow tasks wait for a worker, by task queue.',
    'temporal_workflow_task_schedule_to_start_latency_seconds', `{${worker}}`, 'task_queue', '{{task_queue}}'))
  .withPanel(graph('Activity execution p95', 'Activity run time by activity type, activity tasks and local activities (database steps, first grading attempts) together.', 's',
    `histogram_quantile(0.95, sum by (le, activity_type) (rate({__name__=~"temporal_(local_)?activity_execution_latency_seconds_bucket", ${worker}}[${rate}])))`,
    '{{activity_type}}'))
  .withPanel(graph('Task slots in use', 'Worker task slots in use by region and worker type; at the maximum, work queues up.', 'short',
    `sum by (region, worker_type) (temporal_worker_task_slots_used{${worker}})`, '{{region}} {{worker_type}}'))
  .withRow(new RowBuilder('AI provider'))
  .withPanel(quantile('AI call latency p95', 'AI provider call latency by region and operation.',
    'assessd_ai_request_duration_seconds', `{${worker}}`, 'region, operation', '{{region}} {{operation}}'))
  .withPanel(ratio('AI call errors', 'Share of AI provider calls that failed, by region and provider (alert AssessdAIProviderErrors at 10%).',
    `assessd_ai_requests_total{${worker}, outcome!="ok"}`, `assessd_ai_requests_total{${worker}}`, 'region, provider'))
  .withRow(new RowBuilder('Files'))
  .withPanel(graph('Grading files', 'Grading files of the selected organizations fetched from the media CDN or skipped, by region and outcome.', 'ops',
    `sum by (region, outcome) (rate(assessd_grading_files_total{${workerTenant}}[${rate}]))`, '{{region}} {{outcome}}'))
  .withPanel(graph('Media fetches', 'Media CDN fetches by outcome.', 'ops',
    `sum by (region, outcome) (rate(assessd_media_fetches_total{${worker}}[${rate}]))`, '{{region}} {{outcome}}'))
  .withPanel(graph('Worker memory budget in use', 'Share of each worker\'s memory budget (ASSESSD_WORKER_MEMORY_BYTES) held by answer files, scan files and decoded pages; near 1, work waits its turn (decision 0174).', 'percentunit',
    `max by (region, instance) (assessd_worker_memory_held_bytes{${worker}} / assessd_worker_memory_budget_bytes{${worker}})`, '{{region}} {{instance}}'))
  .withPanel(graph('Worker memory waits', 'Seconds per second that work spent waiting for the worker\'s memory budget, by region: sustained waiting means the budget, or the workers, are too small (alert AssessdWorkerMemoryWaits above 1).', 'short',
    `sum by (region) (rate(assessd_worker_memory_wait_seconds_total{${worker}}[${rate}]))`, '{{region}}'))
  .withRow(new RowBuilder('Answer-sheet scans'))
  .withPanel(graph('Scans finished', 'Answer-sheet scans of the selected organizations finished per second by region and outcome.', 'ops',
    `sum by (region, outcome) (rate(assessd_scanning_scans_total{${workerTenant}}[${rate}]))`, '{{region}} {{outcome}}'))
  .withPanel(graph('Pages read', 'Scanned pages of the selected organizations per second by region and outcome: read, or why a page belongs to nobody.', 'ops',
    `sum by (region, outcome) (rate(assessd_scanning_pages_total{${workerTenant}}[${rate}]))`, '{{region}} {{outcome}}'))
  .withPanel(quantile('Page read time p95', 'Time to read one page, vision model included, by region.',
    'assessd_scanning_page_duration_seconds', `{${worker}}`, 'region', '{{region}}'))
  .withRow(new RowBuilder('Generation'))
  .withPanel(graph('Exam generations finished', 'Exam generations of the selected organizations finished per second by region and outcome (ready, failed).', 'ops',
    `sum by (region, outcome) (rate(assessd_exam_generations_total{${workerTenant}}[${rate}]))`, '{{region}} {{outcome}}'))
  .withPanel(graph('Question regenerations finished', 'Question regenerations of the selected organizations finished per second by region and outcome (ready, failed).', 'ops',
    `sum by (region, outcome) (rate(assessd_question_regenerations_total{${workerTenant}}[${rate}]))`, '{{region}} {{outcome}}'))
  .withRow(new RowBuilder('Webhooks'))
  .withPanel(graph('Webhook deliveries', 'Webhook delivery attempts of the selected organizations per second by region, event type and outcome (delivered, failed).', 'ops',
    `sum by (region, event, outcome) (rate(assessd_webhook_deliveries_total{${workerTenant}}[${rate}]))`, '{{region}} {{event}} {{outcome}}'))
  .withPanel(ratio('Failed webhook deliveries by organization', 'Share of webhook attempts that failed, by organization: an integrator\'s endpoint is down.',
    `assessd_webhook_deliveries_total{${workerTenant}, outcome="failed"}`, `assessd_webhook_deliveries_total{${workerTenant}}`, 'org'))
  .withPanel(quantile('Webhook delivery latency p95', 'Time from request to the endpoint\'s answer, p95, by region and outcome.',
    'assessd_webhook_delivery_duration_seconds', `{${worker}}`, 'region, outcome', '{{region}} {{outcome}}'))
  .withRow(new RowBuilder('LTI grades'))
  .withPanel(graph('LTI score posts', 'Scores posted to LMS line items per second, of the selected organizations, by region and outcome: ok, refused (a 4xx other than 429: given up and audited as lti.score_failed), error (retried). Decision 0204.', 'ops',
    `sum by (region, outcome) (rate(assessd_lti_score_posts_total{${workerTenant}}[${rate}]))`, '{{region}} {{outcome}}'));

const oauth = dashboard('assessd-oauth', 'assessd / OAuth',
  'The OAuth provider: tokens issued, token endpoint errors, logins.')
  .withVariable(labelVariable('org', 'org', 'assessd_org_info', 'Organization'))
  .withPanel(graph('Tokens issued by grant type', 'Access tokens issued per second by grant type.', 'ops',
    `sum by (grant_type) (rate(assessd_oauth_tokens_issued_total{${serve}, org=~"$org"}[${rate}]))`, '{{grant_type}}'))
  .withPanel(graph('Tokens issued by client', 'Access tokens issued per second by organization and client.', 'ops',
    `sum by (org, client) (rate(assessd_oauth_tokens_issued_total{${serve}, org=~"$org"}[${rate}]))`, '{{org}} {{client}}'))
  .withPanel(graph('Token errors', 'Token endpoint errors by grant type and OAuth error code.', 'ops',
    `sum by (grant_type, error) (rate(assessd_oauth_token_errors_total{${serve}}[${rate}]))`, '{{grant_type}} {{error}}'))
  .withPanel(graph('Logins', 'Login attempts by outcome.', 'ops',
    `sum by (outcome) (rate(assessd_logins_total{${serve}}[${rate}]))`, '{{outcome}}'))
  .withPanel(graph('OAuth and login requests', 'Requests to the OAuth endpoints and sign-in pages by route and status.', 'reqps',
    `sum by (route, status) (rate(assessd_http_requests_total{${serve}, route=~"[A-Z]+ /(oauth/|login|consent|logout|\\\\.well-known/).*"}[${rate}]))`,
    '{{route}} {{status}}'));

const embed = dashboard('assessd-embed', 'assessd / Embed sessions',
  'Embedded flows: sessions created and opened by organization and flow, and the embed pages\' traffic.')
  .withVariable(labelVariable('org', 'org', 'assessd_org_info', 'Organization'))
  .withPanel(graph('Sessions created', 'Embed sessions created per second by flow.', 'ops',
    `sum by (flow) (rate(assessd_embed_sessions_created_total{${serve}, org=~"$org"}[${rate}]))`, '{{flow}}'))
  .withPanel(graph('Sessions opened', 'Embed session pages opened per second by flow.', 'ops',
    `sum by (flow) (rate(assessd_embed_sessions_opened_total{${serve}, org=~"$org"}[${rate}]))`, '{{flow}}'))
  .withPanel(graph('Sessions by organization', 'Embed sessions created per second by organization.', 'ops',
    `sum by (org) (rate(assessd_embed_sessions_created_total{${serve}, org=~"$org"}[${rate}]))`, '{{org}}'))
  .withPanel(graph('Embed page requests', 'Embed page requests by route and status.', 'reqps',
    `sum by (route, status) (rate(assessd_http_requests_total{${serve}, org=~"$org", route=~"[A-Z]+ /embed/.*"}[${rate}]))`,
    '{{route}} {{status}}'))
  .withPanel(quantile('Embed page latency p95', 'p95 latency of the embed pages by route.',
    'assessd_http_request_duration_seconds', `{${serve}, route=~"[A-Z]+ /embed/.*"}`, 'route', '{{route}}'));

const out = process.argv[2];
mkdirSync(out, { recursive: true });
for (const [file, builder] of [['overview', overview], ['grading', grading], ['oauth', oauth], ['embed', embed]]) {
  writeFileSync(join(out, `${file}.json`), JSON.stringify(builder.build(), null, 2) + '\n');
}
