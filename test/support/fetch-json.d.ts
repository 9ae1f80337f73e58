// Tests read JSON answers of many shapes through fetch; they assert on them instead of declaring each type.
interface Response {
  json(): Promise<any>;
}
