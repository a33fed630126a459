// ES2024 string methods QuickJS has (the guest tsconfig's lib is ES2023).
interface String {
  toWellFormed(): string;
  isWellFormed(): boolean;
}
