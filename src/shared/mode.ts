/** Every merchant object lives in one of two worlds that never meet: live money, or test mode. */
export type Mode = 'live' | 'test';
