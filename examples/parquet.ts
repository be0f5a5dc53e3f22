// CSV to Parquet, then totals read back from the Parquet files with one column projected:
//   npx spillway submit examples/parquet.ts --param input=sales.csv --param output=sales-parquet/ --wait
//   npx spillway submit examples/parquet.ts --param parquet=sales-parquet/ --wait
// sales.csv: a header `store,amount,day` and a line per sale. The first form writes
// sales-parquet/part-00000.parquet, ... (one a task, snappy pages, row groups of 100,000
// rows); the second reads their row groups as splits, only the columns it names.
import { JobBuilder, requireString, type JobDefinition, type JobParams } from 'spillway';

interface Sale {
  store: string;
  amount: number | null;
  day: string;
}

export default function sales(params: JobParams): JobDefinition {
  const job = new JobBuilder('sales');
  if (params.parquet !== undefined) {
    job
      .readParquet<{ store: string; amount: number | null }>(requireString(params, 'parquet'), { columns: ['store', 'amount'] })
      .map((sale): [string, number] => [sale.store, sale.amount ?? 0])
      .keyBy(([store]) => store)
      .reduce((a, b) => [a[0], a[1] + b[1]])
      .collect();
    return job.build();
  }
  job
    .readCsv<Sale>(requireString(params, 'input'), { header: true, columns: { store: 'string', amount: 'number', day: 'string' } })
    .writeParquet(requireString(params, 'output'), { store: 'UTF8', amount: 'DOUBLE', day: 'UTF8' });
  return job.build();
}
