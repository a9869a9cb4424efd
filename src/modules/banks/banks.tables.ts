// Row types of the banks module, merged into the store's Database in src/store/tables.ts.

/** Client secrets the service made for itself at a bank it serves too (the mounted sandbox bank). */
export interface BankClientSecretsTable {
  client_id: string;
  /** Sealed with SECRET_KEY; shown nowhere. */
  secret_sealed: string;
  created_at: number;
}

export interface BanksTables {
  bank_client_secrets: BankClientSecretsTable;
}

declare module '../../store/tables.ts' {
  interface Database extends BanksTables {}
}
