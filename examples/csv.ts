// The in-stock products of a CSV catalogue, cheapest first in each task, as CSV again:
//   npx spillway submit examples/csv.ts --param input=products.csv --param output=in-stock/ --wait
// products.csv has a header line, e.g.
//   sku,name,price,in_stock
//   A-1,"Lamp, ""Nordic"" style",24.90,true
// Quoted fields may hold commas, doubled quotes and newlines, across any split of the file.
import { JobBuilder, requireString, type JobDefinition, type JobParams } from 'spillway';

interface Product {
  sku: string;
  name: string;
  price: number | null;
  in_stock: boolean | null;
}

export default function inStock(params: JobParams): JobDefinition {
  const job = new JobBuilder('in-stock');
  job
    .readCsv<Product>(requireString(params, 'input'), { header: true, columns: { sku: 'string', name: 'string', price: 'number', in_stock: 'boolean' } })
    .filter((p) => p.in_stock === true && p.price !== null)
    .sortBy((p) => p.price)
    .name('in-stock')
    .writeCsv(requireString(params, 'output'), { header: true, columns: ['sku', 'name', 'price'] });
  return job.build();
}
