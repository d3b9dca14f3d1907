/**
 * Seed 004's states for one (event, destination) delivery. In a module that imports nothing,
 * so the console can bundle the list for the browser rather than keep a copy of its own.
 */
export const DELIVERY_STATUSES = ['PENDING', 'IN_FLIGHT', 'DELIVERED', 'DEAD', 'QUEUED'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
