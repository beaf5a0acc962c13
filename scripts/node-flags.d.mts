export function nodeFlags(launcher: string): string[];
export function nodeArgv(launcher: string): string[];
